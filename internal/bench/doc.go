// Package bench drives load through the initiator's asynchronous API and
// measures it: IOPS, throughput and a latency histogram. It is the engine
// of `rdmablk bench` and of the performance harness.
//
// Each job owns one initiator I/O queue and its registered buffers for the
// whole run (the queue's single-owner rule); jobs never share queues. The
// per-I/O loop allocates nothing: I/O descriptors, buffers and start
// times are preallocated per job, and latencies go into a fixed-size
// histogram that is merged after the run.
package bench
