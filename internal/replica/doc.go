// Package replica is the remote leg of a replicated volume's mirror
// (blockdev/mirror, issue 16): a Leg is a replica's namespace reached
// over NVMe-oF with our own initiator, as a blockdev.Backend with
// blockdev.Async and blockdev.FixedBuffers. On the owner node rdmablkd
// opens one Leg per remote copy — subsystem catalog.ReplicaNQN(volume),
// host identity catalog.OwnerHostNQN(owner, epoch), which the replica
// admits only while that owner and epoch are current — and adds it to
// the volume's mirror.
//
// # Data path
//
// A Leg wraps one initiator.Session (multipath over LegConfig.Paths,
// RDMA or NVMe/TCP per path). Every I/O — async or blocking — uses one
// of Depth preallocated slots, each holding a reusable
// initiator.Request whose Notify is the leg (RequestDone), so an
// I/O allocates nothing in the leg (the session recycles its commands).
// SubmitWrite / SubmitRead take a free slot without waiting and refuse
// (false: the mirror falls back to WriteAt on a worker) when none is
// free or the leg is closed or down; blocking calls wait for a slot.
// The leg batches (blockdev.AsyncBatcher): under a Plug — the target's
// poller plugs the mirror, which plugs its legs, for the commands of one
// poll — async I/O goes through an initiator.Submitter and waits in its
// I/O queue's intake; the Unplug that releases the last Plug issues the
// burst on the poller's goroutine in one post, without a hand-off to the
// initiator's queue goroutine (batch.go; each burst takes the next I/O
// queue). Blocking calls are never held.
// Flush is an NVMe Flush, WriteFUA a Write with FUA, WriteZeroes Write
// Zeroes, Discard a Dataset Management deallocate. Vectored blocking
// calls with several buffers go through one bounce buffer (the target
// and the mirror hand single buffers).
//
// Zero copy: RegisterFixed registers the caller's memory with the
// session (Session.RegisterBuffer), so a write whose buffer lies in it
// is sent with a keyed SGL naming that memory and the replica RDMA-READs
// it — the mirror registers the target's data buffers with the local leg
// and with every Leg, so the buffer the host's data arrived in is the
// source of the replication transfer. Submit*Fixed are Submit*: the
// session recognises registered memory by address. Over NVMe/TCP
// nothing is registered; the session sends a write's data from the
// caller's buffer itself (zero-copy from the leg's threshold,
// docs/tcp-zero-copy.md) and copies what it reads.
//
// # Errors and time bounds
//
// A replica I/O fails — and the mirror faults the leg — with an
// *IOError wrapping blockdev.ErrMedium and the cause:
//
//   - an NVMe error status from the replica (*initiator.StatusError);
//     LBA Out of Range maps to blockdev.ErrOutOfRange instead, though the
//     leg checks ranges itself first;
//   - a lost controller with no other live path: the session's
//     CtrlLossTimeout is LegConfig.LossTimeout (default: none), so the
//     I/O fails at once with initiator.ErrControllerLost; the session
//     keeps reconnecting in the background, and a leg that is back may be
//     rebuilt (mirror SetState Syncing + Rebuild) without reopening;
//   - an I/O timeout (ErrTimeout): the watchdog goroutine ticks every
//     IOTimeout/4 and each submission stamps its slot with the tick
//     count (no clock read per I/O); an I/O in flight for more than
//     IOTimeout (at most 1.25 IOTimeout) takes the whole leg down. Every
//     write-class I/O in flight completes at once with the error, the
//     session is closed (failing what remains), and every later I/O fails
//     at once with ErrDown. A down leg stays down: the owner removes it
//     from the mirror, closes it and opens a new one to rebuild.
//
// # Ownership and buffer lifetimes
//
// The caller owns every buffer. A blocking call uses it until it
// returns; an async buffer belongs to the leg until done.IODone. One
// exception bounds the time the mirror waits: a write failed by the
// watchdog is completed while its request may still be in the session,
// which may still read the buffer (copy on a replay, or the replica's
// RDMA READ of registered memory) — never write it — until the session
// has been torn down. Such a slot stays taken until then, so
// UnregisterFixed and Close, which wait for every slot, return only when
// the session holds no reference to caller memory: memory registered
// with RegisterFixed stays safe to unmap after UnregisterFixed. Reads
// are never completed early (the session may still fill their buffer):
// they complete once the session is closed.
//
// The Leg owns its Session from Open to Close; a mirror owns the Leg
// from AddLeg until RemoveLeg or its Close (which closes the leg).
//
// # Goroutines
//
//   - A finished request completes its caller — done.IODone (async) or
//     the blocking caller's wake-up — on the initiator queue goroutine
//     that finished it (Leg.RequestDone), with no hand-off. The leg's
//     completion goroutine does it instead for a request that finished
//     inside its own submission (a request the session refuses at once
//     completes inside Submit, and IODone must not run inside Submit*),
//     during a burst's Submit or Flush (under the leg's batch lock, which
//     IODone may need), or while the leg closes or is down (on the
//     goroutine of Close or of the watchdog, whose callers may hold locks
//     IODone takes). IODone must not block.
//   - One watchdog goroutine ticks every IOTimeout/4; after a timeout it
//     calls IODone for the abandoned writes and closes the session (which
//     may block for a controller shutdown, bounded by the initiator).
//   - The session's own goroutines (per path, per queue, replay).
//
// All methods are safe for concurrent use. Close flushes the replica
// (unless the leg is down), refuses new I/O, closes the session, waits
// for every slot and stops both goroutines.
//
// Resize is not offered: the session pins the namespace geometry it found
// at its first connect (a path reporting another size is refused), so a
// replica grown in place needs a new Leg.
package replica
