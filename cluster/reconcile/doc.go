// Package reconcile makes a node's target match the catalogue for what
// the node owns, like a controller: desired state (the catalogue) against
// actual state (open backends, the target's subsystems, namespaces and
// host ACLs), level triggered by the catalogue's watch feed.
//
// # What a pass does
//
//  0. Fences (replicated volumes, below): replica subsystems admitting a
//     deposed owner are removed, and stacks built for another role or
//     ownership epoch are retired (their export paths inaccessible unless
//     they serve through the change) or, when no export namespace holds
//     them, taken down, before anything else.
//  1. Volumes with a copy here and not deleted: the backing file is created
//     sparse (or grown) under the volume directory and opened; a volume
//     whose size grew is re-opened at the new size and swapped in under
//     its namespace without detaching it, then the namespace raises the
//     Namespace Attribute Changed event. The owner reports the volume
//     online (or error, with the reason) to the catalogue.
//  2. Subsystems served here (every node in State.SubsystemNodes: the
//     subsystem's node and every node with a copy of a volume it
//     exports): created in the target; allow-any, hosts and
//     namespaces are brought to the catalogue's values, and the
//     subsystem's ANA state for this node (optimized when the catalogue
//     has none) is set on every port of the node's target, for the
//     default ANA group that holds all of the subsystem's namespaces
//     (ana.go): hosts connected through those ports get the ANA Change
//     notice.
//  3. What the catalogue no longer has is removed: namespaces, then
//     subsystems this reconciler created, then backends are closed.
//  4. Volume tombstones with a copy here: the backing file is removed,
//     then PurgeVolume is proposed (with NodeID for a replicated volume:
//     this copy is gone, the name goes with the last). This is the only place data is deleted, and
//     only for a volume the catalogue says was deleted, and only a file
//     that is that volume's alone: no live volume names the same path and
//     it is not the same file (hard link) as an open volume's. Volume
//     paths are plain file names (catalog.ValidVolumePath); a symlink in
//     a volume's place is refused, never followed.
//
// # Replicated volumes (issue 16)
//
// This node's role for a volume is single (the only copy: exactly the
// path above, no mirror), owner (Volume.Node of a volume with copies
// elsewhere) or replica (holds a copy, not the owner). Every copy is a
// file under the volume directory named by its Replica.Path, opened and
// grown by the same rules.
//
//   - Replica: the copy is served in subsystem catalog.ReplicaNQN(volume),
//     namespace 1, admitting only catalog.OwnerHostNQN(owner, epoch) of
//     this node's catalogue; the export subsystem is served too, with the
//     catalogue's ANA state (inaccessible) over the same copy.
//   - Owner: the export namespace's backend is a blockdev/mirror over the
//     local copy and one leg per other copy, each opened with
//     Options.OpenLeg as OwnerHostNQN(self, epoch) (rdmablkd plugs in
//     internal/replica). A copy the owner cannot reach gets a leg that
//     fails every I/O, so the first write records it faulted. The
//     mirror's Membership.Fault proposes OpSetReplicaState faulted with
//     the owner's epoch and returns the commit's result; ErrStaleEpoch
//     fences the volume here at once (its export turns inaccessible
//     without waiting for the catalogue). Faulted copies are moved to
//     syncing (with backoff; an unreachable copy, or one whose rebuild
//     failed, is first reconnected afresh and then copied whole), syncing ones rebuilt (rate
//     Options.RebuildBytesPerSecond), progress proposed with
//     OpReportRebuild at most every catalog.RebuildReportInterval, and a
//     rebuilt copy proposed in sync; the mirror is told once committed.
//   - Failover (restack.go): the stack is rebuilt for the new role and
//     epoch under the export namespaces, which stay attached throughout
//     with the same NSID, UUID and NGUID (no Namespace Attribute Changed
//     event; a kernel multipath host whose other path is dead keeps its
//     device): only the backend is swapped, local copy ↔ mirror, through
//     target.Subsystem.ReplaceNamespaceBackend, which waits for the
//     commands already on the old backend before the old stack is closed.
//     A path that stops serving turns inaccessible before its backend
//     changes (from then on its I/O is answered Asymmetric Access
//     Inaccessible, which hosts retry on another path, and a command that
//     raced the swap is checked again on the new backend); one that
//     starts serving builds the mirror (waiting a bounded time for copies
//     the catalogue counts, confirming its epoch), swaps it in, and only
//     then turns optimized. Adding or removing copies (single ↔ owner)
//     and an owner's resize swap the same way with the path serving
//     throughout (same epoch). If the new stack cannot be opened, the old
//     one is detached and closed, and the next pass retries.
//   - Resync (resync.go): an owner stack built for a volume that was
//     served before (not "creating": a failover, automatic or planned —
//     neither quiesces the old owner first — or this node's restart)
//     with another in-sync copy runs mirror.Resync on a goroutine of its
//     own: every region of the owner's copy is copied to the other
//     in-sync copies under live I/O (rate Options.RebuildBytesPerSecond),
//     so writes the lost owner had in flight, on some copies only, leave
//     no divergent blocks. Progress is logged and proposed
//     (catalog.OpReportResync, with the owner's epoch: Volume.Resync,
//     shown by `rdmablk volume status`) at the start and every
//     catalog.RebuildReportInterval, and cleared when the resync ends;
//     a failover clears it in the catalogue. The copies stay in sync. A stack
//     this process rebuilds at the epoch of one it closed with the copies
//     known identical (a resize; no write failed half-way,
//     mirror.MayDiverge, and any resync finished) skips it; a daemon
//     restart does not know that and resyncs.
//   - Closing an owner's mirror: a copy whose final flush fails is
//     recorded faulted first (mirror.Close), except when the stack is
//     torn down because the epoch moved on (the deposed owner's records
//     would be refused; the copies fenced it: logged at info) or the
//     daemon shuts down (raft is already stopped: Close reports the
//     copy, and the next owner's resync makes the copies identical).
//
// The data-path fence of a deposed owner: the first step of every pass
// removes each replica subsystem whose admitted host is not the owner at
// the current epoch (target.RemoveSubsystem drops that host's
// controllers and waits for the commands they started on the copy), and
// only then does the pass build anything. So once a replica node has
// applied a failover, no write of the old owner reaches its copy; the old
// owner, needing that copy for an acknowledgement and unable to record
// it faulted (its epoch is stale), acknowledges nothing
// (TestDeposedOwnerAcknowledgesNothing).
//
// A new owner does not wait for copies the catalogue calls faulted (the
// lost owner's, usually: the next pass reconnects them), and stops
// waiting for the others once the catalogue deposes it. Before it serves
// it confirms its epoch with the leader (an epoch-checked
// OpSetVolumeState); a refusal fences it, so a restarted old owner whose
// catalogue is behind never serves its outdated copy
// (failover_wait_test.go).
//
// Discovery lists a subsystem at the listeners of every node that serves
// it (State.SubsystemNodes) but this one, whose own the target lists, so
// a host finds every path of a replicated volume.
//
// The reconciler reaches the target through the small Target interface
// (satisfied by *target.Target) and the leader through Proposer.
//
// A pass is idempotent; a failed step is logged and retried on the next
// pass (every change and every Options.Resync interval). A volume whose
// open keeps failing stays in "error" with the reason until it opens; an
// admin's repair (catalog.OpRepairVolume) makes the owner retry at once
// and report the outcome again. After a restart
// the target is empty and the first pass rebuilds it from the catalogue:
// files are re-opened, never re-created or truncated (blockdev/file grows,
// never shrinks).
//
// # Ownership
//
// The Reconciler owns the backends it opened and closes them after the
// target no longer uses them (RemoveNamespace or ReplaceNamespaceBackend
// returned) or on Close. While a stack is rebuilt under its namespaces
// the old and the new stack are open at once (two descriptors of the
// copy's file; an owner's old and new mirror hold legs to the same
// copies at the same epoch) until the swap returns. It
// owns the subsystems it added to the target; others (static ones from
// the daemon config) are never touched.
//
// # Hot path
//
// The target gets a volume handle (volume.go), not a wrapper in the data
// path: it unwraps (target.Unwrapper) to the file backend when that
// backend resizes in place, so the target's io_uring and fixed-buffer
// paths serve cluster volumes as they serve static ones, and a resize
// grows that same backend. The target meters each command into the
// handle (target.IOMeter → metrics.VolumeMeter): atomic adds per I/O, a
// latency sample for one I/O in 64, no clock read otherwise, no
// allocation (BenchmarkVolumeMeterIO). A backend that cannot resize in
// place is not unwrapped: the target then calls through the handle, which
// swaps a re-opened backend in under the live namespace.
//
// # Goroutines
//
// Run drives passes on one goroutine; Sync may be called instead (tests).
// Passes never run concurrently (a mutex serialises them). A pass may
// block while a new owner connects to its copies (bounded, 10 s). Each
// rebuild and each resync runs on a goroutine of its own (plus the one
// running mirror.Rebuild or mirror.Resync), which proposes progress and the in-sync record and
// never takes the pass's mutex; Membership.Fault runs on the mirror's
// goroutines. Both call Kick, which makes Run pass again soon. Discovery's
// DiscoveryEntries runs on target goroutines and only reads the catalogue.
package reconcile
