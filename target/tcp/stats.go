package tcp

import "sync/atomic"

// Stats are a Listener's counters since Listen.
type Stats struct {
	Accepted    uint64 // connections accepted
	Connections uint64 // connections open now
	// Terminated counts connections ended by a C2HTermReq (a protocol
	// error of the host), HostTerminated those a host ended with an
	// H2CTermReq.
	Terminated     uint64
	HostTerminated uint64
	// DataDigestErrors counts commands failed with Transient Transport
	// Error because their data digest did not match.
	DataDigestErrors uint64
	// DrainTimeouts counts connections Close closed with commands still
	// in flight after DrainTimeout.
	DrainTimeouts uint64
}

type counters struct {
	accepted, connections, terminated, hostTerminated, dataDigestErrors, drainTimeouts atomic.Uint64
}

// Stats returns the counters (each read atomically on its own). Any
// goroutine.
func (l *Listener) Stats() Stats {
	c := &l.stats
	return Stats{
		Accepted: c.accepted.Load(), Connections: c.connections.Load(), Terminated: c.terminated.Load(),
		HostTerminated: c.hostTerminated.Load(), DataDigestErrors: c.dataDigestErrors.Load(),
		DrainTimeouts: c.drainTimeouts.Load(),
	}
}
