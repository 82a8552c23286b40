// Package cluster holds the multi-node tests of the control plane: three
// members on loopback in one process (raft over TCP through a stream layer
// the tests can cut), three rdmablkd processes (SIGKILL of the leader,
// restart and catch-up; SIGKILL of a replicated volume's owner under a
// verifying load through a two-path initiator session, with the time
// without I/O logged and the returned copy rebuilt and compared byte for
// byte), the end-to-end path (volume and subsystem created
// on node A, owned by node B, discovered through A, served by B), and the
// benchmarks (volume creates through the API, a target serving 1,000
// namespaces). Everything binds 127.0.0.1 with ephemeral ports.
//
//	go test -race ./test/cluster/                               # default run
//	go test -run='^$' -bench=. -benchtime=1x ./test/cluster/    # benchmarks
package cluster
