// Package rdma is the NVMe-oF RDMA transport binding of the target
// (NVMe-oF spec §7.3 / NVMe over Fabrics RDMA Transport Specification). It
// listens for RDMA CM connect requests, negotiates each queue from the CM
// private data, moves command capsules by SEND, host data by RDMA READ
// (host writes) and RDMA WRITE (host reads), and returns CQEs by SEND (or
// SEND_WITH_INV when the host asked for invalidation). The transport-agnostic
// core (package target) executes the commands.
//
// # Ownership
//
// A Listener owns every connection it accepted. Each connection is one
// NVMe queue and owns, exclusively:
//
//   - a protection domain (one per connection, see below), one completion
//     queue for both work queues, the RC queue pair and its ConnID;
//   - one anonymous mapping (verbs/regmem.Reserve: address space only,
//     resident when touched or registered) holding, in this order: the
//     64-byte SQE of each queue entry (packed), the in-capsule data buffer
//     of each queue entry (the negotiated in-capsule size, on a 4 KiB
//     boundary; none on the admin queue), the 16-byte CQE buffers (one per
//     request slot), one 4 KiB bootstrap data buffer, on a 2 MiB boundary
//     room for one small data buffer (16 KiB) per queue entry when
//     MaxDataTransfer is larger, and on the next 2 MiB boundary room for
//     one large data buffer (MaxDataTransfer bytes) per queue entry,
//     buffers of 64 KiB and more one page apart beyond their size
//     (no power-of-two stride, whose cache-set aliasing slowed 4 KiB I/O
//     at 1 MiB MDTS). A receive is two SGEs, its SQE and its in-capsule buffer, so
//     in-capsule data starts on a 4 KiB boundary (a file backend writes
//     it with O_DIRECT) without wasting a page per SQE. SQEs, in-capsule,
//     CQE and bootstrap buffers are registered at connect as one memory
//     region. Data buffers are registered only after the host's Fabrics
//     Connect succeeded, and then by what the queue has in flight, per
//     size class (a command of at most 16 KiB takes a small buffer, or a
//     free large one when the small pool cannot grow; a larger command a
//     large buffer): a first chunk of 1 MiB of small buffers at Connect
//     (of large ones when there is no small class), the large pool's first
//     1 MiB chunk with the first large command, then, whenever a command
//     finds no free buffer of its class, a chunk as large as that pool
//     (doubling), up to one buffer per queue entry and, past each pool's
//     first chunk, within Config.MaxDataBufferBytes for the whole
//     listener. (One class of MaxDataTransfer-sized buffers made a queue
//     doing 4 KiB reads at QD64 register 63 MiB in six steps on its poll
//     group, stalling the group each time: 1 % of reads took 0.5 s in the
//     lab.) Each chunk is registered as memory regions of at most
//     1 GiB (the PVRDMA limit), each a whole number of buffers, so no
//     buffer straddles two regions; chunks of 2 MiB and more get
//     transparent huge pages advised. Before Connect the bootstrap buffer
//     (enough for the admin Connect's 1,024 bytes of data, which come by
//     RDMA READ) is the queue's only data buffer, and a keyed transfer
//     longer than it is answered Data SGL Length Invalid: a connection
//     that never sends a Connect pins kilobytes, not depth × MDTS.
//     The core gets the registered-at-connect memory and the first data
//     chunk (the small buffers' first chunk when there is a small class) as its data region (target.Queue.SetDataRegion: io_uring fixed
//     buffers), so a backend that pins it for fixed I/O pins no more than
//     the queue always has; buffers of later chunks are served by plain
//     io_uring operations. All of it is registered with local write
//     access only: target buffers never get remote rights; the host's
//     memory is named by the keyed SGL the host sends;
//   - the request slots (two per queue entry, as nvmet: a slot whose CQE
//     SEND is still in flight cannot take the next command of its entry)
//     with their target.Request, SGEs and wait-list links.
//
// Queues are served by poll groups (SPDK's model, DESIGN.md §3): a fixed
// set of poller goroutines (Config.PollGroups, default one per
// GOMAXPROCS), each owning many queues. A queue is assigned at connect to
// the group with the fewest queues; from then on that group's goroutine
// owns its QP, CQ and every slot, so the I/O path has no locks. One pass
// steps each queue once (its CQ, the completions the core handed back,
// waiting requests) and posts, per queue, one batch of receives and one
// batch of sends; each step is one batch for the core
// (target.Queue.BeginBatch / EndBatch), so backend I/O it started
// (io_uring) reaches the device in one submission. While passes find work
// the group keeps passing; after an adaptive number of empty passes (at
// most Config.PollSpins, internal/spin) it arms the CQs, passes once more and
// sleeps on its bell, so an idle target burns no CPU and an oversubscribed
// one does not spin. A queue has two CQs: receives on one, send-queue
// completions (READs, response SENDs) on the other. The receive CQ is
// always armed; the send CQ only while something waits for a send
// completion (a READ in flight, a request short of a slot, credits or a
// buffer, a drain): otherwise a response SEND's completion, which only
// frees its slot, is reaped by the next command's pass instead of waking
// the group once more per I/O. QueueConn.Complete queues the slot on the queue's
// completion channel (capacity = slots, so Complete never blocks) and
// rings the group's bell: a backend completion reaches the owning group
// without a goroutine hand-off. How a group sleeps (Config.PollWait): on a
// Go channel by default (below), or, with PollWait "epoll", in
// epoll_wait on one epoll set holding its CQs' completion channel
// descriptors (verbs.FDNotifier: the provider's own event
// goroutine for the CQ is stopped while the group owns it) and an eventfd
// bell (groupwait_linux.go), so a CQ event wakes the group's thread in
// the kernel with no event goroutine, channel hand-off or extra read;
// ringing costs two atomic operations while the group is awake and one
// eventfd write while it sleeps; the group's first sleeps after work are
// raw waits that keep its P (groupwait_linux.go; the lab's A/Bs against
// the channel disagree: see Config.PollWait). On the channel (also for a provider without
// FDNotifier) CQ events reach the group through the provider's event
// goroutine (verbs.NotifyRouter); there, a queue whose steps keep finding
// nothing goes quiet — its receive CQ armed, its send work all reaped —
// and the group's passes skip it until its CQ's arm is spent, the core
// completes one of its requests, or a control event or drain comes
// (quiet.go: idle connections cost a busy group no CQ polls); and a busy
// queue whose CQs the group armed and polled empty before sleeping is
// clean until an arm is spent, so a wake-up that only hands back requests
// from the core polls neither CQ (clean.go). Each queue has one parked watcher goroutine that records its
// control events (core Close, connection end, drain) and timers (Fabrics
// Connect, drain) as bits the group acts on. A queue that dies or has
// drained leaves its group and is torn down (flushes awaited, core
// completions awaited, resources released) on a goroutine of its own.
// Groups are plain goroutines that yield while they spin (not on a
// schedule while they keep finding work: an internal/nbsys.Yielder here
// measured slower, lab perf A/B 2026-12-06-1738); with
// Config.LockPollerThreads each is locked to an OS thread and spins without
// yielding (measured slower on a shared host: see the option).
//
// A connection counts as unconnected from its connect request until its
// Fabrics Connect succeeds (or it ends). Unconnected connections are capped
// per host address (Config.MaxUnconnectedPerHost) and in total
// (Config.MaxUnconnectedQueues); requests over a cap get a CM reject (no
// resources). One that has no successful Connect within
// Config.ConnectTimeout is disconnected. Stats shows the counts, the
// refusals, the timeouts and the registered bytes.
//
// # Graceful drain
//
// Listener.Close drains each queue: commands that hold a request slot
// finish and their CQEs go out; capsules that arrive afterwards (or were
// waiting for a slot) are neither executed nor answered, and the queue then
// disconnects. The host's error recovery cancels those with its own
// path-related status and retries them (on another path with multipath),
// as after a crash. Answering them with Command Aborted due to SQ Deletion
// (SCT 0) would make a Linux multipath host fail the I/O: it only fails
// over on path-related statuses (SCT 3h).
//
// The data buffer pool is per queue (one PD per connection, below): its
// free list is a stack owned by the poller, without locks. A command that
// finds it empty, when the queue may not register more, waits in
// StateNeedBuffer and continues when a buffer is returned; it is never
// failed for lack of one. Pools are not shared across queues (yet): MRs
// belong to one PD, so sharing needs one PD per device for every queue
// (as nvmet and SPDK have), and the core's data region
// (target.Queue.SetDataRegion) is one slice per queue fixed before the
// first command, which a pool growing across queues does not fit.
//
// One protection domain per connection: a PD is the boundary the RDMA
// device enforces between memory regions and queue pairs. With one PD per
// connection, a stray local key in one queue's work request can never reach
// another host's buffers, and tearing a connection down releases everything
// it registered without coordinating with any other connection. The cost
// (a PD and an MR per queue) is paid once at connect time.
//
// # Buffer lifetimes
//
//   - target.Request.Data handed to Queue.Execute is a slice of the slot's
//     data buffer (keyed SGL) or of its receive buffer (in-capsule data):
//     the backend reads into the very buffer the RDMA WRITE sends and
//     writes from the very buffer the RDMA READ (or the SEND) filled — no
//     copy (TestZeroCopy). It
//     stays valid and untouched by the transport until the request is
//     completed (Execute returned true, or Complete was called); after that
//     the core must not touch it. Memory is unmapped only after every
//     request has completed and every work request has completed or been
//     flushed.
//   - A receive buffer holding in-capsule data is reposted just before the
//     command's CQE SEND is posted; every other receive buffer is reposted as
//     soon as its 64-byte SQE has been copied into the request.
//   - A data buffer is returned to the pool when the request no longer needs
//     it: after execution for host writes, after the SEND completion (which
//     implies the preceding RDMA WRITE completed) for host reads, and only
//     after the RDMA READ completed or was flushed when the queue dies, so no
//     buffer the device could still write is ever reused. The bootstrap
//     buffer is not returned once the queue is connected. Registered
//     chunks stay registered until the queue is released (no shrinking).
//
// # Tests that are slow or gated
//
// TestManyQueuesMemory connects RDMABLK_MANY_QUEUES I/O queues (depth 128)
// and reports RSS and registered bytes with I/O on all of them (skipped
// unless the variable is set). BenchmarkIOQueueConnect measures an I/O
// queue's connect at MDTS 128 KiB and 1 MiB; BenchmarkIdleCPU the CPU of
// an idle target with 64 queues.
//
// # Errors
//
// Per-command errors (bad SGL, short capsule with a readable CID) are
// answered with an error CQE and the queue keeps working; the SQ head
// advances for them as for any consumed command (target.Queue.Consume). Queue-fatal
// errors (a work completion error other than a flush, a capsule too short
// to carry a CID, a failed post) disconnect only that queue; other queues and
// hosts are unaffected. Nothing on the network path panics.
package rdma
