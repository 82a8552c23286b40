// Package initiator is the NVMe-over-Fabrics host, over RDMA and over
// NVMe/TCP: it discovers subsystems, connects a controller (one admin
// queue and N I/O queues, each its own RC queue pair or TCP connection),
// identifies it and its namespaces, keeps it alive,
// and moves data with an asynchronous Request API (Submit) shared by any
// number of goroutines, the blocking io.ReaderAt / io.WriterAt API that
// wraps it, and a raw zero-copy per-queue submit/poll API. A Session adds
// reconnect, per-command replay and multipath by ANA.
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
// # Transports
//
// Options.Transport (or a "tcp://" / "rdma://" prefix on an address or a
// session path) picks the transport per controller. Everything above a
// queue's slot table (qpair.go) — IOQueue, the admin queue, queueMux,
// Controller, Session, replay, multipath — is transport-neutral: it talks
// to its queue's wire (wire.go), one of
//
//   - rdmaWire (wire_rdma.go): an RC QP and CQ; data named by keyed SGLs
//     and moved by the target's RDMA READ / WRITE; what this comment says
//     about registration, keyed SGLs and SENDs is this transport;
//   - tcpWire (wire_tcp.go, wire_tcp_read.go): one TCP connection per
//     queue (NVMe/TCP 1.0): ICReq / ICResp (HPDA 0, the digests asked
//     for by Options.HeaderDigest / DataDigest — a controller that
//     enables other digests is refused — MAXR2T 0), CapsuleCmd PDUs built
//     in per-slot preallocated headers and written batch-wise with one
//     vectored write, host-to-controller data in the capsule up to the
//     controller's IOCCSZ (8 KiB on the admin queue) and otherwise as a
//     Transport SGL Data Block answered by R2T + H2CData of at most
//     MAXH2CDATA, controller data in C2HData (SUCCESS honoured). Write
//     data is sent from the Request's Data itself (no pool buffer: the
//     socket copies it, or, for a batch of capsules carrying at least
//     Options.ZeroCopySendMin bytes of write data, reads it zero-copy
//     until TCP acknowledges it, which a command's response implies:
//     wire_tcp_zc.go); read data is copied from the socket into a pool
//     buffer and from there into Data once the command succeeded (pool
//     buffers are plain memory: there is no PD, nothing is registered).
//     A MemRegion is accepted and registers nothing.
//
// A path may use one transport and its alternate the other: replay and
// ANA multipath do not look at the transport.
//
// # The multiplexed I/O path
//
// Every I/O queue has one submission layer (DESIGN.md §3), shared by any
// number of callers: a goroutine per queue owns the queue's slot table
// (Depth command slots, each with a registered data buffer while in use)
// and takes commands from a lock-free intake that any goroutine pushes
// to. Callers never own a queue. Two APIs submit into it:
//
//   - Namespace.Submit and Session.Submit take a Request (a byte range of
//     caller memory and a Done channel). The request is split into
//     commands of at most MaxTransfer bytes, spread round robin over the
//     queues, and sent back on Done when every command finished.
//   - The blocking methods (Namespace and Session ReadAt, WriteAt,
//     WriteFUA, Flush, Deallocate, WriteZeroes) are thin wrappers: one
//     pooled Request and a wait on its channel.
//   - A Submitter (Session.Submitter) is for a caller with its own queue
//     affinity and bursts (a ublk queue, an NBD connection's reader): its
//     requests wait in the intake until Flush, which does the queue
//     goroutine's work on the caller's goroutine. With SetWaker the caller
//     also waits for the queue's completions itself: Arm hands it the CQ's
//     completion-channel descriptor (verbs.FDNotifier) to poll next to its
//     own events, and the queue goroutine then neither reaps nor sleeps on
//     that CQ until Release or a path change.
//
// A Session chooses the path of a request with one atomic load of an
// immutable path table, rebuilt on every path change (connect, loss, ANA
// change). Each command that fails because its path failed — controller
// lost, QP error, keep-alive timeout, ANA or path status, queue deleted —
// is replayed on its own by the session's replay goroutine on the best
// path, after a reconnect if need be, for the asynchronous and the
// blocking API alike. A read's data reaches the caller only from an
// attempt of that command that completed successfully. Once no path has
// been live for CtrlLossTimeout, waiting and new requests fail at once
// with an error wrapping ErrControllerLost and syscall.EIO.
//
// Neither path allocates or reads a clock per I/O in steady state: a
// request's first command lives inside the Request, the commands of a
// request split in several and the blocking calls' waiters are recycled
// through sync.Pools.
//
// # Zero-copy requests (MemRegion)
//
// By default a command's data is copied between the Request's Data and a
// registered buffer of the queue's pool. Session.RegisterBuffer lends the
// session caller memory instead: every read or write command whose bytes
// lie inside one registered MemRegion (and inside one of its memory
// regions of ≤ 1 GiB) is sent with a keyed SGL that names the caller's
// memory — the target RDMA-READs write data from it and RDMA-WRITEs read
// data into it, and in-capsule write data is sent from it — with no copy.
// The queue goroutine decides per command with one atomic load and a scan
// of the controller's (short) region table; a command outside every
// region, or one that crosses a memory region boundary, takes the copy
// path, so any Request works either way. SessionStats.CopiedBytes and
// ZeroCopyBytes count both paths.
//
// Registration follows the session's controllers, because memory regions
// belong to one protection domain and each controller has its own: a
// controller registers every MemRegion on its PD after it connected and
// before the path goroutine publishes it in the path table (so no command,
// replays included, reaches it before the regions are there);
// RegisterBuffer registers on every controller already published; a
// controller deregisters them in its teardown, after its QPs are
// destroyed. MemRegion.Close deregisters from every controller; the caller
// guarantees nothing is in flight on the memory. A controller that cannot
// register a region logs it and serves that region's commands through the
// copy path. Each region costs one MR per ≤ 1 GiB per connected
// controller (PVRDMA: ≤ 1 GiB of 4 KiB pages per MR, max_mr 262,144).
//
// The guarantee "a read returns data only from a fully successful
// attempt" holds as seen through the result: a request is sent on Done
// with Err nil only when every one of its commands had a fully
// successful attempt, and then every byte of Data comes from such an
// attempt. With zero copy a failed attempt (an error status, or a lost
// controller whose transfer was cut off) may already have written part of
// the caller's memory; that command is then replayed — its successful
// attempt rewrites all of its bytes — or the request fails, and a failed
// zero-copy read leaves the bytes of the failed commands undefined (N
// still counts only bytes before the first failure). No transfer of a
// failed attempt can land after its replay: a command answered with a
// status has finished its transfers (the target sends the response after
// them on the same reliable connection), and a command failed by a lost
// controller is finished or replayed only after that controller's QPs are
// disconnected. Copy-path reads never touch Data on failure.
//
// The raw per-queue API (Controller.Queue, IOQueue Submit/Poll/Wait with
// caller-owned registered Buffers) remains for zero-copy single-owner use
// such as `rdmablk bench`; it bypasses the submission layer and must not
// be mixed with Submit or the blocking methods on the same controller.
//
// # Ownership
//
//   - Over NVMe/TCP a Controller owns per queue a TCP connection, its
//     reader goroutine, the slot table with its preallocated PDU headers
//     and, for I/O queues, the same data buffer pool, unregistered.
//   - Over RDMA a Controller owns one verbs.ProtectionDomain shared by all its queues,
//     the memory regions of the session's MemRegions on that PD, and per
//     queue: a ConnID, a CQ (sends and receives), an RC QP, a
//     registered control region (SQE slots, 16-byte response buffers,
//     per-slot Dataset Management ranges) and, for I/O queues, a registered
//     data buffer pool of Depth buffers of MaxTransfer bytes (4 queues of
//     128 x 128 KiB: 64 MiB), allocated and registered in ≤ 1 GiB memory
//     regions by verbs/regmem. Close releases all of it.
//   - Registered memory is allocated outside the Go heap (anonymous mmap on
//     Linux) because hardware providers require it; it is unmapped only
//     after every QP and MR using it is closed and no goroutine is inside an
//     IOQueue method.
//
// # Buffer lifetimes
//
//   - A Request and its Data belong to the layer from Submit until it is
//     received from Done: the caller must not touch them in between. Data
//     is copied into a queue's registered buffer when a write command is
//     issued (again for a replay) and out of it when a read command
//     succeeded — or, inside a MemRegion, the target accesses Data itself
//     by RDMA during the command, and over NVMe/TCP a write is sent from
//     Data; the layer keeps no reference after Done.
//   - A MemRegion's memory belongs to the caller, who keeps it valid (and
//     outside the Go heap on hardware providers) until MemRegion.Close
//     returns; Close must not run while a Request on it is in flight. The
//     session keeps it registered across reconnects and path changes.
//   - A Buffer belongs to the IOQueue whose AllocBuffer returned it. The
//     caller may read and write Bytes() while the buffer is not attached to
//     a submitted IO. From Submit until Poll returns that IO, the target may
//     RDMA-READ or RDMA-WRITE the buffer at any time: the caller must not
//     touch it. Give it back with FreeBuffer on the same queue.
//   - An IO value belongs to the caller except between a successful Submit
//     and the Poll call that returns it.
//   - The blocking methods copy between the caller's slice and registered
//     buffers; the caller's slice is not retained after they return.
//
// # Goroutines and concurrency
//
//   - Per controller: one submission goroutine per I/O queue (it sleeps on
//     its intake when idle and never touches the queue then), one that
//     polls the admin queue, one that sends Keep Alive every KATO/2, and
//     one per queue that watches the connection for loss. Close stops and
//     joins all of them.
//   - Over NVMe/TCP, one reader goroutine per queue (connection): it reads
//     every PDU, copies C2HData into the command's buffer, answers R2Ts
//     with H2CData (socket writes are serialised with the owner's flush by
//     a mutex) and hands responses to the queue's owner through a
//     lock-free ring (one entry per slot at most; slots are published to
//     the reader by an atomic store and retired by its CAS). A protocol
//     error or a closed connection ends it (H2CTermReq with the FES for a
//     malformed PDU) and loses the controller; disconnect closes the
//     socket and waits for it, so no data lands in host memory after a
//     queue was disconnected.
//   - Per session: one goroutine per path (connect, watch, reconnect) and
//     the replay goroutine. Close joins them.
//   - Namespace.Submit, Session.Submit and the blocking methods are safe
//     for concurrent use by any number of goroutines. Done channels are
//     sent to from queue goroutines (and the replay goroutine) and must
//     have room: a full channel stalls a queue.
//   - An IOQueue of the raw API is owned by one goroutine at a time:
//     Submit, Poll, Wait, AllocBuffer and FreeBuffer must not be called
//     concurrently on the same queue.
//   - Admin commands are serialised by the controller.
//   - Close may be called from any goroutine, also while other goroutines
//     are blocked in IOQueue.Wait or I/O methods: they return promptly
//     (ErrClosed, or requests failed with ErrClosed / ErrSessionClosed),
//     and Close waits for the queue goroutines before it frees memory.
//     Buffers must not be touched after Close (their memory is unmapped).
//
// # In-band authentication
//
// With Options.DHCHAPSecret (and DHCHAPCtrlSecret for bidirectional
// authentication) the host answers a controller that requires
// DH-HMAC-CHAP (AUTHREQ.ATR in a Connect response) the way the Linux host
// does: right after the Fabrics Connect of the admin queue, and of each
// I/O queue, before any other command on that queue, one transaction of
// Authentication Send / Receive commands driven by nvme/auth.Host
// (auth.go), each queue with its own transaction ID. It runs on the
// goroutine that connects the queue (Connect's caller, or a session's
// path goroutine on reconnect, so reconnects authenticate again) and
// touches nothing of the I/O path. With a controller secret the host
// authenticates every queue even when the controller does not ask.
//
// # Errors
//
// Sentinel errors (ErrQueueFull, ErrClosed, ErrControllerLost, ErrUnaligned,
// ...) are tested with errors.Is. A failed NVMe command surfaces as a
// *StatusError whose Unwrap is the nvme.Status code (without the DNR/More
// bits), so errors.Is(err, nvme.StatusConnectInvalidHost) works; an RDMA CM
// rejection surfaces as a *ConnectRejectedError; a failed or impossible
// authentication as an *AuthError (errors.Is(err, ErrAuthFailed)). A transport failure on any
// queue (connection lost, work completion error, protocol violation such as
// a CQE for a command that is not outstanding; over NVMe/TCP also a
// malformed PDU, a header or data digest error, C2HData or an R2T outside
// the command's data or for a CID that is not outstanding, a C2HTermReq;
// keep-alive failure) loses the
// whole controller: every outstanding command fails with ErrControllerLost
// (a Session replays it) and Done() is closed. Bad input is an error, never
// a panic.
package initiator
