// Package ublkback adapts an initiator Session to ublk.Backend: the glue
// that serves an NVMe-oF namespace as /dev/ublkbN. It sits under
// internal/attach because it is the one place allowed to import both
// ublk and initiator (neither imports the other).
//
// # Mapping
//
// Geometry comes from the Session's current path (Session.Limits,
// BlockSize, Size): one ublk queue per initiator I/O queue, each with the
// controller's queue depth; MaxTransfer is the controller's per-command
// limit (so a read or write is one NVMe command); discard is advertised
// when ONCS has Dataset Management, up to one DSM range (32-bit NLB);
// write zeroes when ONCS has Write Zeroes, up to 65536 blocks per command
// (the 16-bit 0's based NLB); flush and FUA when the controller has a
// volatile write cache. Operations: read → Read, write → Write (FUA bit
// from REQ_FUA), flush → Flush, discard → Dataset Management with the
// Deallocate attribute, write zeroes → Write Zeroes with DEAC=0 (the
// initiator never sets DEAC, which is what UBLK_IO_F_NOUNMAP asks for and
// allowed otherwise: deallocation is a device's option, not a duty).
//
// Errors: Errno maps an initiator error to the errno the kernel's own
// NVMe host would end the request with (nvme_error_status in Linux's
// drivers/nvme/host/core.c: ENOSPC for Capacity Exceeded, EOPNOTSUPP for
// unsupported commands and fields, ENODATA for media errors, EILSEQ for
// protection information errors, EBADE for a reservation conflict,
// EREMOTEIO for LBA Out of Range / Namespace Not Ready, ENOLINK for a host
// path error, EIO otherwise and for a lost controller after the session's
// ctrl-loss timeout). A read completes with data only from a fully
// successful command (the initiator's guarantee; the adapter completes a
// failed read with an errno, so the kernel copies nothing).
//
// # Buffers and copies
//
// Each queue owns one anonymous mapping (outside the Go heap) of depth ×
// MaxTransfer bytes: tag t's buffer is the t-th slice, stable for the life
// of the queue, as ublk's copy mode requires (the kernel copies a read's
// data out of the buffer named in the commit). Data therefore moves
// twice: the kernel copies between the bio's pages and the tag buffer
// (ublk's copy, the minimum any ublk server has — see package ublk), and
// the initiator copies between the tag buffer and the queue's registered
// buffer (its Request API copies Data into and out of registered memory).
// The second copy goes away once the initiator can lend registered,
// reconnect-stable buffers to a caller; until then the tag buffers are not
// registered memory.
//
// Queue q of the ublk device submits through Session.Submit with
// Request.Queue = q+1: its commands go to I/O queue q of the current
// path's controller (also after a reconnect, and for replays), with that
// queue's depth.
//
// # Goroutines
//
// Per queue: Submit runs on the ublk queue goroutine and never blocks
// (Session.Submit does not); one completion goroutine receives finished
// Requests from the queue's Done channel (capacity depth, so the
// initiator never stalls on it) and calls ublk's Completer. Close stops
// it and unmaps the buffers; ublk calls it only after every request has
// completed. Submit and completion allocate nothing.
package ublkback
