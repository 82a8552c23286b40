// Package tcp is the NVMe/TCP transport binding of the target (NVMe/TCP
// Transport Specification 1.0, TP 8000; PDU formats in nvme/tcppdu). A
// Listener accepts TCP connections; each connection is one NVMe queue of
// the transport-neutral core (package target): the host's ICReq is
// answered with an ICResp (PFV 1.0, CPDA 0, the digests the host asked
// for, MAXH2CDATA), then command capsules are executed by the core, host
// data arrives in-capsule or by R2T + H2CData, controller data leaves in
// C2HData, and completions in CapsuleResp.
//
// # Ownership
//
// A Listener owns its net.Listener and every connection it accepted.
// A connection owns its socket, its core queue (target.Queue, created
// after the ICReq) and a fixed set of request slots: max(MaxQueueDepth,
// 32) for the queue's entries plus 32 spare ones (below), allocated at
// accept without data buffers. A slot moves reader → core → send path →
// free list; whoever holds it is its only user. Transfer tags (R2T TTAG)
// are slot indices.
//
// # Goroutines
//
// Per connection a reader and a writer goroutine (no poll groups yet);
// responses are written by whichever goroutine produces them, the writer
// only takes over writes that would block (send.go):
//
//   - the reader reads every PDU, validates it (a protocol error stops it:
//     it queues a C2HTermReq with the FES of TCP §3.6.2.5, waits, bounded,
//     until it is written, and closes the connection), calls
//     Queue.Execute and Queue.Destroy (it is the queue's owning goroutine).
//     It works in batches (Queue.BeginBatch/EndBatch): PDUs it already
//     holds, and those the socket already holds (read without blocking),
//     up to 32 commands or 256 KiB, run as one batch for the core, so
//     pipelined commands reach an io_uring backend in one submission. The
//     batch ends before a read that would block: the core submits the
//     held-back I/O (a RAM-backed device completes it inside that call),
//     then the reader writes every response and R2T the batch produced,
//     inline completions included, in one writev. Then, on an I/O queue,
//     it may spin before it parks (spin_linux.go, Config.PollSpins; off
//     by default): it yields, polls the batch's backends (Queue.Poll:
//     their completions are answered from here) and looks at the
//     process's parked set (internal/nbsys) up to an adaptive budget of
//     passes, reads its socket as soon as that is readable, and parks at
//     once when another descriptor of the set is ready, since a spinner
//     keeps the runtime from polling the network for the others;
//   - a goroutine that completes a command outside the reader
//     (QueueConn.Complete: the backend's io_uring completion goroutine, a
//     worker of the core's pool, AER) posts its response and, when no
//     write is under way and the reader is not in a batch, writes it and
//     whatever else is pending itself; otherwise the goroutine writing (or
//     the reader, when its batch ends) takes it into its next write. No
//     wake-up of another goroutine sits between a completion and its
//     response;
//   - all those writes are non-blocking (a raw writev on the socket,
//     made, like the reader's socket reads, through internal/nbsys: a
//     non-blocking call does not enter the scheduler's syscall state,
//     which on an idle daemon woke the runtime's monitor thread per I/O). A
//     write the socket does not take in full — the host reads slowly, or
//     stopped reading while it writes — and the writes past four in a
//     row are handed with the write token to the writer goroutine, which
//     blocks on the socket until everything pending is out. So the reader
//     always goes on reading (TCP flow control cannot deadlock the
//     connection) and a backend goroutine shared by many connections
//     never waits for one host. Where raw socket access is missing
//     (other platforms) every write goes to the writer goroutine.
//
// One goroutine writes at a time (the write token), taking up to 32
// posted jobs per writev in the order posted: responses leave in the
// order the core finished them, R2Ts in the order their capsules
// arrived, the C2HTermReq last (nothing is written after it). A
// response's slot returns to the free list after the write that carries
// it; its CQE may reach the host first, and the host may reuse that queue
// entry at once: hence the spare slots (at most 32 responses are in the
// write under way), and the reader counts a host's outstanding commands
// as busy slots minus those responses. QueueConn.Close (keep-alive
// expiry, controller teardown) closes the socket; the reader then ends
// the queue.
//
// Zero copy (zc.go, internal/tcpzc, docs/tcp-zero-copy.md): a write that
// carries at least ZeroCopySendMin bytes of read data, on an I/O queue
// whose peer is not on a loopback address, goes out through the
// connection's own io_uring (IORING_OP_SENDMSG_ZC), made at its first
// such write and used under one mutex by the token holder, the reader
// (which waits there for notices when zero-copy sends hold every free
// slot) and the connection's end. Its slots are held until the kernel's
// notices, and the reader counts them like inWrite. A connection that
// ends with notices outstanding leaves its sender to one process-wide
// janitor goroutine (started on demand, gone when it holds nothing),
// which reaps it every second until the kernel lets go.
//
// Listener.Close drains: every connection stops reading (a read deadline
// in the past wakes its reader), waits at most DrainTimeout for the
// commands the core is executing and sends their responses; only when all
// connections are quiet does any of them close and destroy its queue
// (destroying an admin queue ends its controller's I/O queues, which
// must not happen while they still drain). Capsules not yet read and
// writes still waiting for H2CData are neither executed nor answered: the
// host retries them after reconnecting, as the RDMA binding's drain.
//
// Connections between accept and a successful Fabrics Connect are capped
// (MaxUnconnected, MaxUnconnectedPerHost): one over a cap is closed at
// once. A connection has ConnectTimeout from accept to a successful Fabrics
// Connect (ICReq included); then no read deadline (the core's keep-alive
// timer ends a silent host).
//
// # Buffer lifetimes and copies
//
// Each slot has one data buffer, 4 KiB aligned (a file backend can use it
// for O_DIRECT), allocated when a command first needs it and grown to the
// next power of two up to MaxDataTransfer; it is kept for the slot's later
// commands. Memory per connection is thus bounded by slots ×
// MaxDataTransfer ((128 + 32) × 1 MiB by default) and is only as large as
// the I/O the host actually did (the free list is a stack: the spare
// slots get buffers only when a host keeps its queue full). Before the queue's Fabrics Connect no command
// gets more than 8 KiB (a larger transfer is answered Data SGL Length
// Invalid) and at most 4 may be outstanding (more end the connection), so
// a connection that never connects pins tens of kilobytes until
// ConnectTimeout.
// target.Request.Data is a slice of that buffer from Execute until the
// response has been written.
//
// Copies: host data (in-capsule and H2CData) is read from the socket
// straight into the slot's buffer that the backend then writes from — one
// copy, kernel to user, which a plain socket cannot avoid (zero copy from
// the socket into an O_DIRECT buffer would need a NIC with NVMe/TCP
// offload or io_uring zero-copy receive; not done). PDU headers go through
// a 32 KiB bufio.Reader; a data read larger than what it holds bypasses
// it, a smaller one is copied once more from it. C2HData is written with
// writev from the buffer the backend read into (no user-space copy; the
// kernel copies into the socket), or zero-copy (above: the kernel sends
// from the pages themselves); the small PDUs of a write (C2HData headers,
// CapsuleResps, R2Ts, digests) are packed into a per-connection buffer
// between the data runs. After a zero-copy write that buffer, like the
// write's slots, stays untouched until the notices: the next write takes
// another from the sender's pool. Digests are computed over those same
// buffers.
//
// # Errors
//
// Per-command errors (a bad SGL, a data digest error: Transient Transport
// Error, TCP §3.6.2.1) get an error CQE and the queue goes on, the SQ head
// advancing as for any consumed command. Framing and sequence errors — a
// PDU before ICReq, an unknown or controller-to-host PDU type, bad HLEN /
// PDO / PLEN or digest flags, oversize data, a header digest error, an
// H2CData outside its R2T window or out of order, over MAXH2CDATA, with a
// TTAG or CCCID naming no transfer — end the connection with a
// C2HTermReq naming the FES (and FEI, the offending field's offset, for
// FES 1 and 6). A host that has more commands outstanding than it has
// queue entries (or than 4 before its Fabrics Connect) is disconnected
// (logged; no FES fits). An H2CTermReq closes the connection quietly.
// Nothing on the network path panics.
//
// C2HData SUCCESS is never set: it may be used only while SQ flow control
// is disabled, which the core does not offer (see send.go).
package tcp
