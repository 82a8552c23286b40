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
//     resident when touched or registered) holding the receive buffers
//     (64 + in-capsule bytes each, one per queue entry), the 16-byte CQE
//     buffers (one per request slot), one 4 KiB bootstrap data buffer, and
//     on a 2 MiB boundary the data buffer pool (MaxDataTransfer bytes each,
//     one per queue entry; transparent huge pages advised). The receive,
//     CQE and bootstrap buffers are registered at connect as one memory
//     region. The data buffers are registered only after the host's
//     Fabrics Connect succeeded, as memory regions of at most 1 GiB (the
//     PVRDMA limit), each a whole number of data buffers, so no buffer
//     straddles two regions; until then the bootstrap buffer (enough for
//     the admin Connect's 1,024 bytes of data, which come by RDMA READ) is
//     the queue's only data buffer, and a keyed transfer longer than it is
//     answered Data SGL Length Invalid. A connection that never sends a
//     Connect therefore pins kilobytes, not depth × MDTS. Data buffers and
//     in-capsule data start on 4 KiB boundaries (each SQE takes the last
//     64 bytes of a page, its in-capsule data the next page), so a file
//     backend moves them with O_DIRECT straight to and from the file.
//     All of it is registered with local write access only: target
//     buffers never get remote rights; the host's memory is named by the
//     keyed SGL the host sends;
//   - the request slots (two per queue entry, as nvmet: a slot whose CQE
//     SEND is still in flight cannot take the next command of its entry)
//     with their target.Request, SGEs and wait-list links;
//   - one poller goroutine that owns the QP, the CQ and every slot. Nothing
//     else touches them, so the I/O path has no locks; the only hand-off is
//     the completion channel fed by QueueConn.Complete (capacity = slots,
//     so Complete never blocks). The poller busy-polls while there is work
//     and, after Config.PollSpins empty polls, arms the CQ and sleeps on
//     its completion channel, so an idle queue burns no CPU. Each poll is
//     one batch for the core (target.Queue.BeginBatch / EndBatch): backend
//     I/O the batch started (io_uring) reaches the device in one submission.
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
// finds it empty waits in StateNeedBuffer and continues when a buffer is
// returned; it is never failed for lack of one.
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
//     buffer the device could still write is ever reused.
//
// # Errors
//
// Per-command errors (bad SGL, short capsule with a readable CID) are
// answered with an error CQE and the queue keeps working. Queue-fatal
// errors (a work completion error other than a flush, a capsule too short
// to carry a CID, a failed post) disconnect only that queue; other queues and
// hosts are unaffected. Nothing on the network path panics.
package rdma
