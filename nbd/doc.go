// Package nbd is a Network Block Device server: it exports byte-addressed
// backends (in rdmablk: an NVMe-oF namespace reached through the
// initiator) to NBD clients — the Linux kernel's nbd driver, nbd-client,
// qemu-img, fio's ioengine=nbd (libnbd).
//
// It speaks the fixed newstyle handshake (NBD_OPT_GO, NBD_OPT_INFO,
// NBD_OPT_EXPORT_NAME, NBD_OPT_LIST, NBD_OPT_ABORT; other options are
// answered NBD_REP_ERR_UNSUP, so clients fall back to simple replies) and
// the transmission commands READ, WRITE, FLUSH, TRIM, WRITE_ZEROES and
// DISC with the FUA flag. The protocol follows
// github.com/NetworkBlockDevice/nbd doc/proto.md; the code is our own.
//
// Mapping to NVMe (through the optional Backend interfaces): FLUSH →
// Flusher (NVMe Flush), WRITE with NBD_CMD_FLAG_FUA → FUAWriter (NVMe Write
// with FUA; without it WriteAt then Flush), TRIM → Trimmer (Dataset
// Management, deallocate), WRITE_ZEROES → Zeroer (NVMe Write Zeroes).
// Requests that are not multiples of Backend.BlockSize are served by
// read-modify-write of the edge blocks, serialised among themselves.
//
// The kernel path (AttachKernel, Linux only) hands one end of each of N
// socket pairs to /dev/nbdX with the NBD ioctls (NBD_SET_SOCK once per
// socket, all ioctls from one locked OS thread, as the kernel requires)
// and serves the other ends with ServeTransmission, which starts directly
// in the transmission phase. Exports advertise NBD_FLAG_CAN_MULTI_CONN
// (every connection sees the same data and a FLUSH on one covers writes
// completed on all), so the kernel spreads its queues over the sockets;
// rdmablk attaches one socket per initiator I/O queue.
//
// # Ownership and buffer lifetimes
//
//   - A Server owns its listeners (after Serve), its connections and their
//     goroutines; Close closes all of them and waits for the goroutines.
//     It never closes a Backend: the caller does, after Server.Close.
//   - Each request's payload lives in a buffer from a per-size-class pool:
//     a WRITE's data is read from the socket straight into it and handed
//     to Backend.WriteAt; a READ's buffer is filled by Backend.ReadAt and
//     written to the socket with the reply header in one vectored write.
//     The backend must not retain the slice after its call returns.
//
// # Concurrency
//
// One goroutine per connection reads requests; each request runs on its
// own goroutine (at most Options.MaxInFlight per connection), so a
// connection's requests are pipelined into the backend (for rdmablk: the
// initiator's multiplexed queues, where none of them owns a queue), and
// replies are written under a per-connection mutex as each finishes, out
// of order (as the protocol allows). Backends must be safe for concurrent
// use. Malformed input (bad magic, oversized option, short read) ends
// that connection only, never the server; a failing backend call becomes
// an NBD error reply (EIO, EINVAL, ENOSPC, ENOTSUP...).
package nbd
