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
// socket, all ioctls from one locked OS thread, as the kernel requires;
// that thread blocks every signal while it sits in NBD_DO_IT, since a
// signal taken there makes the kernel shut the device down) and serves the other ends with ServeTransmission, which starts directly
// in the transmission phase. Exports advertise NBD_FLAG_CAN_MULTI_CONN
// (every connection sees the same data and a FLUSH on one covers writes
// completed on all), so the kernel spreads its queues over the sockets;
// rdmablk attaches one socket per initiator I/O queue.
//
// # Ownership and buffer lifetimes
//
//   - A Server owns its listeners (after Serve), its connections and their
//     goroutines; Close closes all of them and waits for the goroutines
//     and for every request in flight to reply (or fail to). It never
//     closes a Backend: the caller does, after Server.Close.
//   - A connection owns MaxInFlight request slots (Request values, reused:
//     no allocation per request). Each request's payload is a buffer of a
//     power-of-two size class: the one its slot kept from its previous
//     request (up to 256 KiB) or one from a per-class pool. A WRITE's data
//     is read from the socket straight into it; a READ's buffer is filled
//     by the backend and written to the socket after the reply header in
//     one vectored write. The backend owns the buffer (Request.Data) from
//     AsyncQueue.Submit until it calls Request.Complete, and a blocking
//     call's slice until it returns; it must not retain it after that.
//
// # Concurrency
//
// One goroutine per connection reads requests. With an AsyncBackend it
// decodes a request, takes a free slot (waiting while MaxInFlight are in
// flight — no spinning), reads a WRITE's payload into the slot's buffer,
// submits it to the connection's AsyncQueue and goes on reading: no
// goroutine and no wait per request. Requests the server emulates
// (unaligned read-modify-write, serialised among themselves; TRIM with
// FUA; zeroes with unaligned edges), any request an export without an
// AsyncBackend gets, and error replies run on a goroutine of their own
// with the blocking Backend methods. Backends must be safe for concurrent
// use.
//
// A connection served by descriptor (the kernel path's socket pairs, and
// Unix or TCP sockets adopted after their handshake) whose AsyncQueue is
// also a Poller runs a poll loop instead (loop_linux.go): its one goroutine
// reads the socket without blocking, submits, reaps the queue's
// completions itself (Poller.Arm) and writes the replies, and sleeps only
// in poll(2) on the socket, the queue's descriptor and an eventfd that
// other goroutines' completions poke; the socket is outside Go's netpoller
// (sockConn), and its descriptor is closed only after the loop let go of it.
// Since it never parks in Go it passes through the scheduler itself every
// few milliseconds (internal/nbsys.Yielder).
//
// Replies are written by the goroutine that completes a request (the
// backend's completion goroutine, or the request's own goroutine) under
// the connection's write lock: the first to find no write under way
// writes every reply pending — several in one vectored write — while
// later completions only queue theirs, so a busy connection batches its
// replies without a writer goroutine or an extra wake-up per request
// (Request.CompleteMore lets a backend draining several completions hand
// them over as one batch). Replies go out in completion order, not
// request order, as the protocol allows. A write error closes the
// connection.
//
// FLUSH is executed when it is received, concurrently with requests in
// flight: it covers every write answered before it was received, on this
// connection or any other (NBD_FLAG_CAN_MULTI_CONN), because a write is
// answered only after the backend completed it and the backend's flush
// (NVMe Flush) covers every completed write.
//
// Malformed input (bad magic, oversized option or write, short read)
// ends that connection only, never the server, after its requests in
// flight replied; a failing backend call becomes an NBD error reply (EIO,
// EINVAL, ENOSPC, ENOTSUP...).
package nbd
