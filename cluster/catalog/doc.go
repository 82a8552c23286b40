// Package catalog is the cluster's replicated state: the nodes of the
// cluster, the volumes they own, the NVM subsystems that export those
// volumes and their host access lists, and ANA group states. It is pure
// data and logic: no raft, no I/O. Package cluster feeds it the raft log.
//
// # Determinism
//
// State changes only through Apply(Command), which is deterministic: the
// same sequence of commands applied to the same starting State yields the
// same State (and the same results and errors) on every node. Anything
// non-deterministic — UUIDs, NGUIDs, timestamps, backing-file paths — is
// chosen by the proposer and carried inside the Command. A command is
// validated fully before it mutates anything, so a rejected command leaves
// the State untouched.
//
// # Validation and identity
//
// NewVolume is the one place a client's request becomes a Volume
// (defaults, limits, the backing file's name derived from the volume's
// name); Apply checks the same rules again plus what needs the catalogue:
// the owner exists, the size fits the owner's filesystem
// (Node.VolumeFSBytes), the path is canonical and unique on its node, and
// UUID and NGUID are unique in the cluster (hosts merge namespaces by
// them). A create carrying the RequestID of the create that made the
// object answers that create's result again instead of ErrExists.
//
// # Versions
//
// Every Command carries V, the command format version (CommandVersion).
// Apply rejects versions it does not know with ErrVersion instead of
// guessing; the snapshot format carries SnapshotVersion likewise. Fields
// are only ever added, so a newer node reads older entries.
//
// # Ownership and lifetimes
//
// A State is owned by whoever holds it; Apply mutates its receiver. Readers
// that hand a State to other goroutines give them Clone()s; values
// returned by the accessor methods (Volumes, Subsystems, ...) are copies.
//
// # Deletion
//
// DeleteVolume does not forget a volume: it leaves a tombstone (state
// "deleting") so that the owner node, even one that was down at the time,
// learns that the data must go. The owner removes the backing file and then
// proposes PurgeVolume, which forgets the name. Nothing else ever leads a
// node to delete a volume's data.
package catalog
