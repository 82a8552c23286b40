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
// data out of the buffer named in the commit). OpenQueue registers the
// mapping with the session (Session.RegisterBuffer, as initiator
// MemRegions of whole tag buffers within 1 GiB each, so that no tag
// buffer crosses one of the initiator's ≤ 1 GiB memory regions; one
// MemRegion for any usual geometry): every controller of every path registers it on its
// protection domain — again after each reconnect, before the new
// controller carries I/O — so the NVMe commands name the tag buffers in
// their keyed SGLs and the target moves the data by RDMA straight to or
// from them. Data therefore moves once per I/O on the CPU: the kernel
// copies between the bio's pages and the tag buffer (ublk copy mode with
// server buffers, the minimum for an RDMA server — see package ublk); the
// initiator copies nothing (SessionStats.CopiedBytes stays 0 for ublk
// traffic). If a controller cannot register the mapping, its commands take
// the initiator's copy path: slower, still correct. Close deregisters the
// mapping (ublk calls it only after every tag has completed, so nothing
// is in flight) and unmaps it.
//
// A failed read may have written part of the tag buffer (zero copy lets
// a failed attempt's data land); the adapter completes it with an errno,
// so the kernel copies nothing out of it, and a replayed read rewrites
// every byte before it succeeds.
//
// Queue q of the ublk device submits through Session.Submit with
// Request.Queue = q+1: its commands go to I/O queue q of the current
// path's controller (also after a reconnect, and for replays), with that
// queue's depth.
//
// # Goroutines
//
// Per queue: Submit and Flush run on the ublk queue goroutine and never
// block for a completion. The adapter has no goroutine of its own. Each
// ublk queue submits through an initiator Submitter on its I/O queue:
// Submit leaves the commands in the queue's intake, Flush (once per ublk
// loop) issues the burst in one post, and Arm (ublk.Waiter) hands the
// ublk loop the I/O queue's CQ descriptor, which it polls in its own
// io_uring; when it is readable the loop's Flush reaps the completions,
// so RequestDone runs on the ublk queue goroutine and ublk's Completer is
// a channel send without a wake-up — no initiator goroutine and no
// eventfd write per completion. Where the CQ gives no descriptor
// (NVMe/TCP; a dead controller; after Release), the initiator's queue
// goroutine (or the session's replay goroutine, or Submit itself for a
// request refused at once) calls RequestDone, and ublk's Completer wakes
// the queue with one eventfd write if it sleeps. Close deregisters and
// unmaps the buffers; ublk calls it only after every request has
// completed. Submit and completion allocate nothing.
package ublkback
