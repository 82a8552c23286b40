// Package daemon wires rdmablkd together: it loads the configuration
// (viper: embedded default, file, environment, flags), opens the volumes'
// backends, builds the target core with its subsystems, and starts one
// NVMe-oF/RDMA listener per configured address on the chosen verbs
// provider.
//
// Ownership: the Daemon owns every backend it opened and closes them after
// the listeners have drained and the target is closed, so that no I/O can
// reach a closed backend and every acknowledged write is durable (Close of
// a file backend is fdatasync + close).
package daemon
