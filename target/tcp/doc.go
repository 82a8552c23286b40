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
// 32) of them, allocated at accept without data buffers. A slot moves
// reader → core → writer → free list; whoever holds it is its only user.
// Transfer tags (R2T TTAG) are slot indices.
//
// # Goroutines
//
// Two per connection (a first version: no poll groups yet):
//
//   - the reader reads every PDU, validates it (a protocol error stops it:
//     it queues a C2HTermReq with the FES of TCP §3.6.2.5, waits, bounded,
//     until it is written, and closes the connection), calls
//     Queue.Execute and Queue.Destroy (it is the queue's owning goroutine)
//     and asks the writer for R2Ts. PDUs it already holds in its read
//     buffer run as one batch for the core (Queue.BeginBatch/EndBatch),
//     so pipelined commands reach an io_uring backend in one submission;
//     the batch ends before any read that may block;
//   - the writer is the only goroutine that writes the socket after
//     ICResp: R2Ts, C2HData + CapsuleResp, the final C2HTermReq — one
//     job at a time, in the order queued. Completions therefore leave in
//     the order the core finished them, per connection. It returns a
//     slot to the free list after the slot's data went out and before
//     its CapsuleResp does, so a host that sends a new command as soon as
//     it sees a CQE always finds a slot.
//
// QueueConn.Complete (backend workers, AER, any goroutine) queues the
// slot for the writer; the queue has room for one job per slot plus the
// TermReq, so it never blocks. QueueConn.Close (keep-alive expiry,
// controller teardown) closes the socket; the reader then ends the queue.
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
// MaxDataTransfer (128 × 1 MiB by default) and is only as large as the
// I/O the host actually did. Before the queue's Fabrics Connect no command
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
// writev from the buffer the backend read into (no user-space copy).
// Digests are computed over those same buffers.
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
// is disabled, which the core does not offer (see writer).
package tcp
