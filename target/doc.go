// Package target is the transport-agnostic NVMe-over-Fabrics target core:
// Target, Port, Subsystem, namespace, Controller, Queue and the per-command
// dispatch (fabrics, admin, discovery, NVM I/O), modelled on Linux nvmet
// (a transport is an ops table, the request lives in the transport's slot,
// the I/O path speaks nvme.Status) and SPDK lib/nvmf (explicit request
// states; execution says whether it completed synchronously).
//
// # Ownership
//
// The Target owns subsystems, controllers and queues. A Subsystem owns its
// namespace table but NOT the blockdev.Backend behind a namespace: the
// caller who passed the backend to AddNamespace keeps owning it and closes
// it, but only after RemoveNamespace, RemoveSubsystem or Target.Close has
// returned — from then on the core never touches that backend again
// (in-flight I/O is reference counted per namespace and drained first).
// A backend that implements Unwrapper is followed to the backend it wraps,
// and the core runs every command on that one (its fast paths stay
// visible); the wrapper keeps its owner's lifetime rules. Resizing a
// namespace (Subsystem.ResizeNamespace) grows that backend in place
// through blockdev.Resizer. Subsystem.ReplaceNamespaceBackend puts
// another backend under an attached namespace (same NSID and
// identifiers, no event unless it grew): commands already on the old
// backend drain first, and from its return the core never touches the
// old backend again, as after RemoveNamespace; a command that read the
// namespace table before the swap runs on the new backend, its ANA state
// checked again.
//
// A transport (target/rdma, later target/tcp) owns each Request and its
// Data buffer (see transport.go). The core uses a Request from the call to
// Queue.Execute until it completes it: either Execute returns done=true, or
// it returns false and the core calls QueueConn.Complete exactly once.
// Between those points the transport must not read or write the Request.
//
// # Buffer lifetimes
//
// Request.Data is the transport's buffer (registered RDMA memory for
// zero copy). For host-to-controller commands the core only reads it; for
// controller-to-host commands it writes at most Length bytes. It hands
// slices of Data to backends (ReadAt/WriteAt), which by the blockdev
// contract do not retain them. The core keeps no reference to Data after
// completion. Identify, log page and feature data are marshalled straight
// into Data.
//
// # Goroutines
//
//   - Queue.Execute and Queue.Destroy run on the transport goroutine that
//     owns the queue (one goroutine per queue). Execute never blocks on a
//     backend that may block; it may block briefly sending to the worker
//     pool when that pool's buffer is full (backpressure).
//   - Backends implementing blockdev.NonBlocking (and reporting true) run
//     inline in Execute. Others run on a fixed pool of Options.Workers
//     goroutines that complete requests through QueueConn.Complete.
//   - Asynchronous event requests complete from whatever goroutine raised
//     the event (AddNamespace, a subsystem change, ...).
//   - Keep-alive timers run on time.AfterFunc goroutines (the clock is
//     injectable for tests), one timer per controller (never one per
//     command), armed at the admin Connect and re-armed when the
//     controller becomes ready (CSTS.RDY); any command on any of its
//     queues, an I/O-queue Connect included, is traffic.
//   - DH-HMAC-CHAP (auth.go): Authentication Send/Receive run on the
//     worker pool (a DH computation takes milliseconds; a poll group must
//     not wait for it), serialised per queue by its queueAuth mutex. One
//     timer per queue that must authenticate (authTimeout from Connect)
//     and, after a failure, one timer that closes the controller's
//     connections (authFailureLinger) run on the Target's clock. Secrets
//     are copied when configured (Subsystem.SetHostAuth) and never logged.
//   - A namespace's IOMeter is called by whichever goroutine completes a
//     command (queue goroutine, worker, backend completion goroutine).
//     The I/O path reads the clock for one metered command in 64 only
//     (latency samples), and on the Capacity Exceeded error path (a
//     once-a-minute log line per namespace).
//   - Control-path methods (AddPort, AddSubsystem, AddNamespace, ...) may
//     be called from any goroutine. RemoveNamespace, RemoveSubsystem and
//     Close block until in-flight I/O on the affected namespaces finished.
//
// The I/O path takes no lock: the namespace table and the ANA states
// (ana.go) are immutable values behind atomic pointers (copy on write),
// counters are sharded atomics.
// Admin state of a controller is guarded by Controller.mu.
//
// # Errors
//
// Control-path methods return Go errors wrapping the sentinel errors in
// errors.go. The command path never returns a Go error and never panics on
// bad input: every malformed command completes with an NVMe status.
//
// Shutdown: commands already executing when the target closes, or when it
// tears a controller down (subsystem removed, keep-alive expiry), finish
// normally; those it refuses afterwards get Internal Path Error (SCT 3h,
// no DNR), which a multipath host fails over and a single-path host
// retries after reconnecting. Command Aborted due to SQ Deletion is kept
// for queues the host itself took away. A full backing store (ENOSPC,
// EDQUOT, blockdev.ErrNoSpace) is Capacity Exceeded with DNR. A backend
// error wrapping blockdev.ErrPathUnavailable (a replicated volume's
// mirror that is fenced or whose local copy failed) is Asymmetric Access
// Inaccessible (SCT 3h, SC 02h, no DNR): a multipath host retries the
// command on another node's controller.
package target
