// Package mirror is a blockdev.Backend that replicates a volume
// synchronously over one local leg and up to seven remote legs (each leg
// any blockdev.Backend; in rdmablkd the remote ones are NVMe-oF
// namespaces reached through our initiator behind an adapter). It is the
// data path of a replicated volume on its owner node (issue 16): reads
// are served by the local leg; writes, write zeroes, discards and
// flushes go to every leg that is in sync or syncing and complete when
// all of them have completed; a leg that fails is recorded out of sync
// through the consumer's Membership before the operation completes.
//
// # Legs and states
//
// Each remote leg is InSync, Syncing or Faulted (State). The caller
// applies the catalogue's states (AddLeg, SetState, RemoveLeg); the
// mirror itself only moves a leg to Faulted, when it fails, and then
// records that through Membership.Fault. The legs and their states are an
// immutable set swapped atomically (copy on write under a control mutex):
// every operation loads it once and takes no lock for it.
//
// While a leg is Faulted the mirror marks in its dirty bitmap every
// region (Config.RegionBytes, default 1 MiB; one bit per region of the
// volume) written without it. A leg added Syncing or Faulted has no
// history: every region is dirty. Rebuild copies the dirty regions of a
// Syncing leg from the local leg, rate limited, with Progress readable
// at any time; when it returns nil the caller records the leg in sync
// and calls SetState(leg, InSync).
//
// # The fencing argument
//
// Invariant: an operation is acknowledged only if every leg the
// catalogue may count as in sync has completed it. A leg the mirror
// dispatches to (InSync or Syncing: a syncing leg may be declared in sync
// at any moment, so it is waited for too) either completes the operation
// or fails it; when it fails, the mirror swaps in a set where the leg is
// Faulted with a pending record (an episode) and calls Membership.Fault
// on a goroutine of its own. The failed operation waits for the episode.
// Every operation that starts while the record is pending (it sees the
// episode in the set it loaded) does not go to the leg, marks its
// regions dirty, and waits for the episode too, because until the record
// is committed the catalogue still calls the leg in sync. If Fault
// returns an error the mirror tries once more for each waiting operation
// and, if that fails too, the operation fails with an error wrapping
// ErrFenced; operations keep failing so (each one retrying the record)
// until a record succeeds or the caller changes the leg's state. A
// partitioned owner therefore cannot acknowledge a write that a replica
// lacks: the replica is in sync in the catalogue, so the record cannot
// commit without a quorum, so the write fails.
//
// Operations that went to the leg before the swap and succeeded there
// complete normally: they are on the leg. Those that fail there join the
// episode. So does a Flush: a leg that fails a Flush may have lost any
// write since its last flush, so its whole bitmap is marked (full copy).
//
// Flush ordering: a write that completed before Flush was called has
// completed on every leg that was in sync or syncing (or that leg was
// recorded faulted first), and Flush goes to every such leg, whose own
// Flush covers every write completed on it. FUA is passed to every leg:
// the write completes when it is durable on each. A write that completes
// (acknowledged or failed) on some legs only is not undone: like a device
// that fails a write, the blocks' content is then undefined.
//
// The local leg failing a write-class operation stops the volume: the
// operation fails with ErrLocalFaulted (wrapping the leg's error), every
// later I/O fails the same way (the local leg serves reads and may now
// miss data other legs have), and the fault is reported through
// Membership.Fault(LocalName, cause), not waited for: failing a write is
// always safe. Requests that are malformed (range, alignment) are
// rejected before any leg sees them, so a leg's error is always a fault.
//
// Discard passes to every leg as it is; on legs whose discarded blocks
// read back undefined (block devices) the legs may differ there, which a
// reader cannot tell from any other undefined content.
//
// Concurrent writes to overlapping blocks may reach the legs in
// different orders and leave them different, as in any mirror (Linux md
// RAID1 too); NVMe leaves the result of such writes undefined, and
// hosts (file systems, databases) do not issue them.
//
// # Rebuild
//
// Region locks (regionlock.go) make the copy exact under live I/O. Every
// write-class operation takes its regions in shared mode before it loads
// the leg set and keeps them until it has completed, faults recorded. The
// rebuild copies one region at a time holding it exclusively: it waits
// for the operations in flight on that region to finish and holds new
// ones back (async submissions are refused and fall back to the blocking
// path) while it reads the local leg and writes the syncing leg. Because
// the leg became Syncing before Rebuild started: (1) an operation that
// loaded an older set where the leg was Faulted holds its regions until
// it has marked them dirty, so when the rebuild takes a region its dirty
// bit is final; (2) every operation that takes the region after the copy
// loads a set where the leg is Syncing and writes to the leg itself, after
// the copy; (3) no write to the region runs during the copy, so the copy
// (read from the local leg) is never older than what the leg gets
// afterwards. A region whose bit is clear needs no copy: every write to
// it since the fault went to the leg. After the last region the rebuild
// flushes the leg. The rate limit is a token bucket (burst: one region)
// on an injectable Clock; no lock is held while it sleeps.
//
// # Resync after an unclean failover
//
// When the owner is lost, the writes it had in flight and never
// acknowledged may have reached some copies and not others (copy B got
// the write, the new owner C did not). Any content is valid for those
// blocks — they were never acknowledged — but the copies must agree, or
// a read served by one owner and, after a later failover, by another
// returns different bytes for a block nobody rewrote. The dirty bitmap
// cannot tell: it lived on the lost owner and only covers faulted legs.
//
// Resync makes every in-sync remote leg identical to the local leg: the
// new owner runs it once its mirror is built. It walks every region of
// the volume and copies it from the local leg to each in-sync leg under
// the region's exclusive lock — the same lock and argument as Rebuild
// (every write to the region waits for the copy, and writes after it go
// to every leg too, since the legs stay InSync throughout), so no write
// is lost and each region is identical on every leg once copied. It is
// rate limited by the rebuild's token bucket and reports Progress
// (ResyncProgress). A leg being resynced that is faulted meanwhile gets
// every region dirty (it may differ anywhere not yet copied), so its
// Rebuild copies it whole.
//
// Design choice: a full pass, not a write-intent bitmap. Linux md keeps
// a persistent bitmap of regions with writes in flight so that only
// those are resynced after a crash; here the node that knows which
// regions had writes in flight is the one that died, so the bitmap would
// have to be persisted on the other copies (written, and made durable,
// before each write to a region that is not yet marked: an extra
// round trip on the write path whenever a new region is touched) and
// merged by the new owner. A full pass is correct without any new
// on-disk or wire state and costs bandwidth (rate limited) only after an
// unclean hand-off; an intent bitmap is the improvement to make when
// resync traffic on large volumes matters. Between the failover and the
// end of the pass the copies may still differ in blocks of
// unacknowledged writes (a second failover in that window can expose
// them); the new owner's own reads are consistent throughout.
//
// # Capabilities
//
// Backend() returns the mirror with exactly the optional interfaces of
// the local leg (blockdev.AsyncBatcher, blockdev.FixedBuffers,
// blockdev.Resizer), and always blockdev.Async. It does not implement
// the target's Unwrapper: the data path must go through the mirror. It
// is not NonBlocking (operations may wait for Membership.Fault).
//
//   - SubmitWrite starts the write on each leg's Async path (fixed
//     submissions on legs that registered the caller's region) and, for a
//     leg without one or that refuses, on a worker running the leg's
//     WriteAt; the remote legs first, the local leg last, so that the
//     copies' network round trip overlaps the local submission. It
//     refuses (false: the caller uses WriteAt) when the request is
//     invalid, Config.MaxInFlight operations are in flight, the rebuild
//     copies one of its regions, a fault record is pending, or the volume
//     is down.
//   - SubmitRead and SubmitReadFixed go to the local leg.
//   - RegisterFixed registers the memory with the local leg and with every
//     remote leg that implements blockdev.FixedBuffers (and legs added
//     later), so the same registered buffer is the source of the local
//     write and of the replication transfer: zero copy.
//   - Plug and Unplug reach every batching leg in pairs; Unplug releases
//     the remote legs' bursts before the local one's, for the same
//     reason.
//   - Resize resizes every leg (all must be Resizers).
//
// # Ownership and buffer lifetimes
//
// The caller owns every buffer. The mirror hands the same buffers to
// every leg, neither copying nor retaining them: a blocking call returns
// when every leg's call has returned; an async write's buf belongs to
// the mirror (and its legs) until done.IODone, which is called after every
// leg's completion. The mirror owns its legs from New / AddLeg until
// RemoveLeg (which hands the backend back) or Close (which closes them).
//
// # Goroutines
//
//   - Config.Workers workers run legs' blocking calls and finish async
//     operations whose last leg completed inside SubmitWrite.
//   - One settler records the faults of async operations that met one and
//     then calls their IODone; Membership.Fault is never called on an I/O
//     completion goroutine nor inside Unplug.
//   - One goroutine per fault record (Membership.Fault) and per report of
//     the local leg's failure.
//   - Rebuild and Resync run on the caller's goroutine.
//
// done.IODone is called exactly once per accepted SubmitWrite, from a leg's
// completion goroutine, a worker or the settler — never inside
// SubmitWrite. Per-I/O state is preallocated (MaxInFlight of it) and no
// clock is read per I/O: the hot path does not allocate.
//
// Close waits for the operations in flight, including those waiting for a
// fault record, stops the goroutines above (not a record in progress) and
// closes every leg. A remote leg whose Close (final flush) fails is
// ignored when its fault is already recorded, and otherwise recorded
// faulted through Membership on Close's goroutine before Close returns;
// Close fails (ErrFenced) only when that record fails, or when the local
// leg's Close fails.
package mirror
