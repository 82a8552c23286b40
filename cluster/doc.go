// Package cluster makes rdmablkd nodes a cluster: a hashicorp/raft group
// whose replicated state machine is the catalogue (package
// cluster/catalog). The raft log and stable store are raft-boltdb/v2
// (bbolt) in <dir>/raft.db, snapshots are files under <dir>/snapshots,
// and peers talk over raft's TCP transport with an advertise address, or
// over any StreamLayer (TLSLayer: mutual TLS between node certificates).
//
// Subpackages: cluster/catalog (the state and its commands), cluster/api
// (the control API's client and wire types; no raft), cluster/api/server
// (the API's handlers, roles, forwarding of writes to the leader),
// cluster/metrics (Prometheus), cluster/reconcile (each node makes its
// target match what the catalogue says it owns) and cluster/agent (one
// member, as the daemon runs it).
//
// # Timing
//
// Raft's timeouts default to DefaultHeartbeatTimeout (2 s),
// DefaultElectionTimeout (2 s) and DefaultLeaderLeaseTimeout (1 s): long
// enough that a busy host does not depose a healthy leader, short enough
// that a failed one is replaced in a few seconds. An idle leader sends a
// commit-index-only AppendEntries every DefaultCommitTimeout (1 s; raft's
// own 50 ms cost a cluster node ~13 % of its CPU on the lab's guests
// while nothing changed); Apply follows each write with a barrier entry so
// that followers still apply it within a round trip. All are
// configurable.
//
// # Ownership and lifetimes
//
// A Node owns its raft instance, stores and transport; Close releases
// them. The catalogue lives inside the Node's FSM; State returns deep
// copies, View lends the live state for the duration of a callback only
// (the callback must not retain or modify it).
//
// # Goroutines
//
// Raft runs its own goroutines. The FSM's Apply, Snapshot and Restore are
// called by raft; Apply and Restore take the FSM's write lock, readers
// (State, View) the read lock. Watchers are signalled after the lock is
// released, by a non-blocking send on a 1-buffered channel: a watcher sees
// "something changed at least once since you last looked" (level
// triggered) and must re-read State. All Node methods are safe for
// concurrent use.
//
// # Errors
//
// Writes on a follower fail with ErrNotLeader (a *NotLeaderError naming the
// leader when known): nothing happened, the API layer forwards them. A
// write that raft accepted but whose leader lost leadership (or shut down)
// before it knew the outcome fails with ErrOutcomeUnknown: it may still
// commit, so only idempotent writes are retried (creates carry request
// IDs). Catalogue rejections are the catalog sentinels, returned unchanged
// from Apply; catalog.ErrStaleEpoch among them tells an owner it has been
// replaced (see the catalog package's fencing rule).
package cluster
