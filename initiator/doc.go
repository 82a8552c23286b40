// Package initiator is the NVMe-over-Fabrics RDMA host: it discovers
// subsystems, connects a controller (one admin queue and N I/O queues, each
// its own RC queue pair), identifies it and its namespaces, keeps it alive,
// and moves data with a blocking io.ReaderAt / io.WriterAt API and an
// asynchronous, zero-copy submit/poll API.
//
// The model is the SPDK host, which is also the only one PVRDMA userspace
// supports (see DESIGN.md §4): data buffers are registered once, in pools of
// at most 1 GiB per memory region, and named in commands by keyed SGL
// descriptors of subtype 0x0 (Address) — never 0xF, the host never expects
// or performs invalidation. Sends never use IBV_SEND_INLINE: in-capsule
// write data travels as a second SGE of the command SEND. Work requests are
// posted in batches and completions are busy-polled with an arm-and-wait
// fallback. Every device limit (MaxQPWR, MaxSGE, MaxCQE, MaxMRSize,
// MaxQPRdAtom) is respected, so the same code runs on the soft "pvrdma"
// profile.
//
// # Ownership
//
//   - A Controller owns one verbs.ProtectionDomain shared by all its queues,
//     and per queue: a ConnID, a CQ (sends and receives), an RC QP, a
//     registered control region (SQE slots, 16-byte response buffers,
//     per-slot Dataset Management ranges) and, for I/O queues, a registered
//     data buffer pool of Depth buffers of MaxTransfer bytes (4 queues of
//     128 x 128 KiB: 64 MiB). Close releases all of it.
//   - Registered memory is allocated outside the Go heap (anonymous mmap on
//     Linux) because hardware providers require it; it is unmapped only
//     after every QP and MR using it is closed and no goroutine is inside an
//     IOQueue method.
//
// # Buffer lifetimes
//
//   - A Buffer belongs to the IOQueue whose AllocBuffer returned it. The
//     caller may read and write Bytes() while the buffer is not attached to
//     a submitted IO. From Submit until Poll returns that IO, the target may
//     RDMA-READ or RDMA-WRITE the buffer at any time: the caller must not
//     touch it. Give it back with FreeBuffer on the same queue.
//   - An IO value belongs to the caller except between a successful Submit
//     and the Poll call that returns it; the queue keeps a pointer to it in
//     the meantime (so in-flight IOs stay retrievable for a future
//     reconnect-and-replay).
//   - The blocking Namespace methods copy between the caller's slice and
//     registered buffers; the caller's slice is not retained.
//
// # Concurrency
//
//   - An IOQueue is owned by one goroutine at a time: Submit, Poll, Wait,
//     AllocBuffer and FreeBuffer must not be called concurrently on the same
//     queue. Different queues may be driven by different goroutines in
//     parallel. The blocking Namespace methods borrow a whole queue for the
//     duration of a call from the controller's free list (a transfer longer
//     than one queue's pipeline also takes whatever other queues are free
//     and runs a part on each), so they are safe for concurrent use by any
//     number of goroutines — but a queue that a
//     goroutine drives through the async API (Controller.Queue) must not be
//     used by the blocking methods at the same time; use one style per
//     controller, or bracket async use with your own synchronisation.
//   - Admin commands are serialised by the controller; one goroutine polls
//     the admin queue, one sends Keep Alive every KATO/2, and one per queue
//     watches the connection for loss. Close stops and joins all of them.
//   - Close may be called from any goroutine, also while other goroutines
//     are blocked in IOQueue.Wait or Namespace methods: they return
//     promptly (ErrClosed, or IOs failed with ErrClosed), and Close waits
//     for them to leave before it frees memory. Buffers must not be
//     touched after Close (their memory is unmapped).
//
// # Errors
//
// Sentinel errors (ErrQueueFull, ErrClosed, ErrControllerLost, ErrUnaligned,
// ...) are tested with errors.Is. A failed NVMe command surfaces as a
// *StatusError whose Unwrap is the nvme.Status code (without the DNR/More
// bits), so errors.Is(err, nvme.StatusConnectInvalidHost) works; an RDMA CM
// rejection surfaces as a *ConnectRejectedError. A transport failure on any
// queue (connection lost, work completion error, protocol violation such as
// a CQE for a command that is not outstanding, keep-alive failure) loses the
// whole controller: every outstanding IO completes with ErrControllerLost
// and Done() is closed. Bad input is an error, never a panic.
package initiator
