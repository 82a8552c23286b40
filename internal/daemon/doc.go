// Package daemon wires rdmablkd together: it loads the configuration
// (viper: embedded default, file, environment, flags), opens the volumes'
// backends, builds the target core with its subsystems, and starts one
// NVMe-oF/RDMA listener per configured address on the chosen verbs
// provider. It also serves the standalone /metrics endpoint
// (metrics.listen), tells systemd when it is ready (Notify, sd_notify(3)
// over $NOTIFY_SOCKET) and raises the file descriptor limit.
//
// Configuration: every key of the file and every RDMABLKD_* variable must
// name a setting (internal/confkeys finds typos and suggests the nearest
// key); Validate checks every value against the range the target and the
// RDMA binding accept, naming the key and its flag. Start either returns a
// running Daemon or an error naming the setting that failed, after closing
// everything it had opened (backends flushed and closed) and removing the
// volume files that this start created.
//
// Controller IDs (cntlid.go): standalone, the target hands out
// controller IDs from 1..0xFFEF; a cluster node from the range the
// catalogue assigned it (catalog.Node.CNTLIDIndex): it starts with the
// range recorded in <cluster data dir>/cntlid-range.json by the previous
// run, and applies (Target.SetCNTLIDRange) and records the catalogue's
// as soon as its registration is seen. On its first start (no record
// yet) a node starts at an ID hashed from its node ID until then.
//
// Goroutines: the metrics endpoint runs one http.Server goroutine
// (started by Start, stopped by Close); in cluster mode one goroutine
// watches the catalogue for this node's controller-ID range, applies it
// to the target and records it (started by Start, stopped by Close before the member); the target,
// listeners and cluster member run their own (see their packages).
//
// Ownership: the Daemon owns every backend it opened and closes them after
// the listeners have drained and the target is closed, so that no I/O can
// reach a closed backend and every acknowledged write is durable (Close of
// a file backend is fdatasync + close).
package daemon
