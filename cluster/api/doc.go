// Package api is the cluster's control API: versioned HTTP/JSON under
// /v1/ (volumes, subsystems, cluster membership, health), Prometheus
// /metrics, and Client, the Go client the admin CLI and the nodes use.
//
// # Any node answers
//
// Reads are served from the receiving node's catalogue (it may lag the
// leader by the replication delay). Writes on a follower are forwarded to
// the leader's API, whose address the catalogue holds, with the
// X-Rdmablk-Forwarded header set so that they are never forwarded twice;
// while there is no leader (an election) the follower retries until
// Options.ForwardTimeout, then answers 503 with code "no_leader". Callers
// never need to know who leads.
//
// # Errors
//
// Every error is a JSON body {"error": {"code": ..., "message": ...}} with
// the HTTP status that fits: 400 invalid, 404 not_found, 409 exists or
// conflict, 503 no_leader / not_leader, 504 timeout, 500 internal. Client
// methods return *Error, which errors.Is matches against the catalog
// sentinels (ErrNotFound, ErrExists, ...).
//
// # Security
//
// The daemon binds the API to localhost by default. With TLS configured
// (ServerTLS), clients must present a certificate signed by the client CA;
// nodes use their own certificate as client certificate when forwarding.
//
// # Ownership
//
// Request and response bodies are read fully (bounded to 1 MiB) and not
// retained. The Server holds no state of its own beyond its Options.
package api
