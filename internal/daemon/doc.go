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
// Goroutines: the metrics endpoint runs one http.Server goroutine
// (started by Start, stopped by Close); the target, listeners and cluster
// member run their own (see their packages).
//
// Ownership: the Daemon owns every backend it opened and closes them after
// the listeners have drained and the target is closed, so that no I/O can
// reach a closed backend and every acknowledged write is durable (Close of
// a file backend is fdatasync + close).
package daemon
