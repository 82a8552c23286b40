// Package reconcile makes a node's target match the catalogue for what
// the node owns, like a controller: desired state (the catalogue) against
// actual state (open backends, the target's subsystems, namespaces and
// host ACLs), level triggered by the catalogue's watch feed.
//
// # What a pass does
//
//  1. Volumes owned here and not deleted: the backing file is created
//     sparse (or grown) under the volume directory and opened; a volume
//     whose size grew is re-opened at the new size and swapped in under
//     its namespace without detaching it, then the namespace raises the
//     Namespace Attribute Changed event. The owner reports the volume
//     online (or error, with the reason) to the catalogue.
//  2. Subsystems served here: created in the target; allow-any, hosts and
//     namespaces are brought to the catalogue's values, and the
//     subsystem's ANA state for this node (optimized when the catalogue
//     has none) is set on every port of the node's target, for the
//     default ANA group that holds all of the subsystem's namespaces
//     (ana.go): hosts connected through those ports get the ANA Change
//     notice.
//  3. What the catalogue no longer has is removed: namespaces, then
//     subsystems this reconciler created, then backends are closed.
//  4. Volume tombstones owned here: the backing file is removed, then
//     PurgeVolume is proposed. This is the only place data is deleted, and
//     only for a volume the catalogue says was deleted, and only a file
//     that is that volume's alone: no live volume names the same path and
//     it is not the same file (hard link) as an open volume's. Volume
//     paths are plain file names (catalog.ValidVolumePath); a symlink in
//     a volume's place is refused, never followed.
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
// target no longer uses them (RemoveNamespace returned) or on Close. It
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
// Passes never run concurrently (a mutex serialises them). Discovery's
// DiscoveryEntries runs on target goroutines and only reads the catalogue.
package reconcile
