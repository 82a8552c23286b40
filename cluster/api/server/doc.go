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
// # Goroutines
//
// Handlers run on net/http's goroutines; the status handler asks the other
// members for their state in parallel (bounded to 2 s). The Server holds no
// state of its own beyond its Options.
//
// # Ownership
//
// Request bodies are read fully (bounded to 1 MiB) and not retained.
package server
