// Package server is the server side of the cluster's control API (the
// client and wire types are package cluster/api): the /v1/ handlers,
// forwarding of writes to the leader, Propose (the nodes' own writes), the
// HTTP(S) listener, server TLS, and authorisation by role.
//
// # Any node answers
//
// Reads are served from the receiving node's catalogue (it may lag the
// leader by the replication delay). Writes on a follower are forwarded to
// the leader's API, whose address the catalogue holds, with the
// X-Rdmablk-Forwarded header set so that they are never forwarded twice;
// while there is no leader (an election) the follower retries until
// Options.ForwardTimeout, then answers 503 with code "no_leader".
//
// # Roles
//
// Every endpoint but GET /v1/health needs a role (auth.go, and
// docs/security.md): reader for reads and /metrics, admin for the admin
// writes, node for join, remove and internal/apply. Identities are client
// certificates (URI SAN rdmablk://ROLE/NAME) and bearer tokens stored as
// SHA-256. No identity is 401, a missing role 403, both JSON naming the
// role needed. A node forwarding a write sends the caller's roles along;
// the leader believes them only from a node. internal/apply takes only
// the commands nodes propose (registration of themselves, volume state,
// purge, and an owner's replica states, rebuild and resync progress and failover,
// fenced by its ownership epoch): everything else is built by the leader
// from typed requests.
// A join is checked first (Options.VerifyJoin): the node must answer as
// itself at its API address and accept connections at its raft address.
//
// # Retries
//
// A write whose leader lost leadership before raft took it (503
// not_leader) is retried here, forwarded to the new leader, until
// Options.ForwardTimeout; one whose outcome is unknown is answered 503
// outcome_unknown and left to the client (creates are idempotent by
// request ID). Propose retries through both, for the nodes' own
// idempotent commands.
//
// # Replicated volumes
//
// A create with replicas > 1 and no replica_nodes is placed by the leader
// (catalog.PlaceReplicas) on nodes that answer /v1/health now
// (Options.Live replaces the probe, bounded to 1 s). A failover without a
// target picks one with catalog.PickNewOwner among reachable in-sync
// copies and carries the epoch it saw, so a concurrent move makes it fail
// (409) rather than move the volume twice. GET /v1/volumes/{name}/status
// answers api.VolumeStatus (copies, owner, rebuild percent and ETA, and
// the owner's resync while one runs).
// A stale ownership epoch is 409 with code "stale_epoch".
//
// RunFailoverWatch is the automatic failover policy: on the leader, every
// WatchOptions.Interval it probes the nodes, and an owner unreachable for
// WatchOptions.Grace — or for WatchOptions.RefusedGrace when its host
// refused every probe's connection (Reach Refused: up, no rdmablkd
// listening) — loses its volumes that have an in-sync copy on a node
// that answered (catalog.FailoverCommands). A new leader starts the grace
// period afresh.
//
// # Goroutines
//
// Handlers run on net/http's goroutines; the status handler asks the other
// members for their state in parallel (bounded to 2 s), as do placement
// and failover (1 s). RunFailoverWatch runs on the caller's goroutine and
// keeps its reachability record to itself. The Server holds no state of
// its own beyond its Options.
//
// # Ownership
//
// Request bodies are read fully (bounded to 1 MiB) and not retained.
package server
