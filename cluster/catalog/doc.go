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
// # Replicas
//
// A volume has Replicas (the desired count, 1 to MaxReplicas) copies in
// ReplicaSet, each a backing file (Path) on a node, in state syncing,
// in-sync or faulted, a syncing one with the owner's last Rebuild report.
// Volume.Node is the owner: it serves the volume ANA-optimized and is the
// only writer, mirroring to the others. Entries from before replication
// have no ReplicaSet: their one copy is Node's Path, in sync
// (ReplicaList). Apply keeps these invariants for every live volume it
// stores (Volume.checkReplicas), rejecting the whole command otherwise:
//
//   - copies are on distinct nodes, at most MaxReplicas of them;
//   - the owner holds an in-sync copy, so there is always one; the owner's
//     own copy never leaves in-sync (its failure means a failover, or the
//     volume's error), and the last in-sync copy never becomes faulted;
//   - a faulted copy rejoins only through syncing (a rebuild), and only a
//     syncing copy has rebuild progress;
//   - only an in-sync copy becomes owner. OpFailover moves, with the
//     volume, every volume its subsystem exports (one ANA state per
//     subsystem and node) and, in the same command, sets that subsystem's
//     ANA states: the new owner optimized, every other node inaccessible,
//     so hosts never see two optimized owners. OpSetANAState refuses to
//     make a non-owner of a replicated volume optimized;
//   - OpAddReplica adds a copy syncing, with a full-copy rebuild record;
//     OpRemoveReplica never removes the owner's copy or the last in-sync
//     one, and lowers the desired count.
//
// # Resync after an unclean hand-off
//
// A new owner (after a failover, or the owner after a restart) copies its
// whole copy to the other in-sync copies, because writes the lost owner
// had in flight and never acknowledged may sit on some copies and not
// others. It records the progress in Volume.Resync with OpReportResync
// (the Rebuild figures, rate limited like rebuild reports: at the start,
// then at most every RebuildReportInterval) and clears it (OpReportResync
// without progress) when the resync ends, done or failed; OpFailover
// clears it in the same command that moves the owner, since the old
// owner's resync stops with its role. The record is for people (volume
// status): while it is set, the in-sync copies hold every acknowledged
// write but may still differ in blocks no host was ever told were
// written. A second failover in that window is therefore as safe as any
// — any content of those blocks is correct, the new owner's copy becomes
// the one the others are made identical to, by a resync of its own —
// and PickNewOwner need not (and does not) look at it: the resync's
// source is always the owner, the node being replaced. A planned
// failover during a resync costs a full pass more, nothing else.
// Nodes of an older version 2 reject report_resync as an unknown op and
// keep no record; nothing else depends on it.
//
// # Controller ID ranges
//
// Every node with a copy of a replicated volume serves its export
// subsystem, so a host may reach one subsystem through several nodes and
// (Linux) refuses a path whose controller ID another path already has.
// OpRegisterNode gives a node, when it is first registered, the lowest
// free Node.CNTLIDIndex (1 to MaxCNTLIDNodes) and keeps it on every later
// registration (restarts); the index picks a range of CNTLIDStride IDs
// (CNTLIDRange), so nodes' ranges are disjoint by construction. Indices
// of removed nodes are reused; nodes beyond MaxCNTLIDNodes get none. The
// index is chosen by Apply from the state, not carried in the command:
// deterministic for every node that applies the same log (or snapshot).
// Entries registered by older versions have none until the node
// registers again.
//
// A subsystem exporting replicated volumes is served by every node with a
// copy (State.SubsystemNodes), each with its ANA state. A tombstone is
// forgotten when every copy's node has purged (OpPurgeVolume with NodeID).
//
// # Ownership epochs: the fencing rule
//
// Volume.Epoch starts at 1 and every change of owner (OpFailover, nothing
// else) increments it. Every command an owner proposes about its
// volume's copies (OpSetReplicaState, OpReportRebuild, OpReportResync) carries the epoch
// it believes in, and Apply rejects it with ErrStaleEpoch unless that is
// the volume's epoch now. So an owner that was partitioned away or
// deposed can never commit "copy X faulted" after it was replaced: it
// cannot drop a copy from the in-sync set, hence cannot acknowledge a
// write that the new owner's copies lack. A failover proposed on a view
// of the catalogue (the leader's automatic one, PickNewOwner and
// FailoverCommands) carries the epoch it saw for the same reason.
// ErrStaleEpoch tells the proposer it is no longer the owner: it must
// stop serving the volume.
//
// The data path follows the same token: an owner reaches each copy through
// ReplicaNQN(volume) as host OwnerHostNQN(owner, epoch), and a replica node
// admits only the owner and epoch of its own catalogue. The new owner
// applies the failover before it serves, so from then on it refuses the
// deposed owner's writes; the deposed owner, needing every in-sync copy
// for an acknowledgement and unable to fault one, acknowledges nothing.
//
// # Versions
//
// Every Command carries V, the command format version. Apply takes
// MinCommandVersion to CommandVersion (2) and rejects others with
// ErrVersion instead of guessing; the replica ops need version 2. The
// snapshot format carries SnapshotVersion (2; 1 still reads) likewise.
// Fields are only ever added, so a newer node reads older entries. A
// command or snapshot that uses nothing of version 2 is written as
// version 1 (Command.Version), so nodes from before replication keep
// applying the log during a rolling upgrade; every node must run version
// 2 before the first replicated volume is created (older nodes reject
// those entries with ErrVersion).
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
