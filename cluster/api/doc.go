// Package api is the client side of the cluster's control API: Client
// (the Go client the admin CLI and the nodes use), the request and response
// wire types of /v1/, the error body and its mapping to sentinels, and the
// client TLS configuration. It imports no raft, bbolt, prometheus or target
// package, so the guest CLI links none of them (the server is package
// cluster/api/server).
//
// # Any node answers
//
// Reads are served from the receiving node's catalogue (it may lag the
// leader by the replication delay). Writes on a follower are forwarded to
// the leader; callers never need to know who leads.
//
// # Errors
//
// Every error is a JSON body {"error": {"code": ..., "message": ...}} with
// the HTTP status that fits: 400 invalid, 401 unauthenticated, 403
// forbidden, 404 not_found, 405 method_not_allowed, 409 exists, conflict
// or stale_epoch (catalog.ErrStaleEpoch: an owner's command after it was
// replaced), 503 no_leader / not_leader / outcome_unknown, 504 timeout, 500
// internal. Client methods return *Error, which errors.Is matches against
// the catalog sentinels (ErrNotFound, ErrExists, ...) and this package's
// (ErrNotLeader, ErrOutcomeUnknown, ...).
//
// # Retries
//
// Client retries writes with backoff while there is no leader, on
// not_leader and on outcome_unknown, until its context ends. This is safe
// because every write it retries is idempotent: creates carry a
// client-generated request ID that the catalogue remembers (a retried
// create answers the object its first attempt made), and after an attempt
// whose outcome is unknown a delete that finds nothing or a host that is
// already allowed counts as that attempt's success. Replica add and
// failover are idempotent in the catalogue (a copy already on that node
// with that path, a move to the current owner, answer the volume), and a
// replica remove that finds nothing is the first attempt's success. Other
// writes (remove namespace, ANA, allow-any) converge or fail plainly.
//
// # Ownership
//
// Request and response bodies are read fully (responses bounded to 64 MiB)
// and not retained. A Client is safe for concurrent use.
package api
