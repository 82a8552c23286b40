// Package metrics is the Prometheus instrumentation of a cluster node:
// per-volume (hence per-namespace) I/O counters, byte counters and latency
// histograms, connected controllers and target counters, and raft state.
// It owns one prometheus.Registry per Metrics value (no global registry),
// served by Handler.
//
// # Hot path
//
// VolumeMeter methods are called on every backend I/O. Their counters and
// histograms are resolved once, when the meter is created, so an
// observation is a few atomic adds and allocates nothing
// (BenchmarkVolumeMeter).
//
// # Goroutines
//
// Every method is safe for concurrent use. Collectors registered with
// WatchTarget and WatchRaft read their sources when /metrics is scraped.
package metrics
