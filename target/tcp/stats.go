package tcp

import "sync/atomic"

// Stats are a Listener's counters since Listen.
type Stats struct {
	Accepted    uint64 // connections accepted
	Connections uint64 // connections open now
	// Unconnected are the open connections without a successful Fabrics
	// Connect yet; Refused counts connections closed at accept because
	// MaxUnconnected or MaxUnconnectedPerHost was reached.
	Unconnected uint64
	Refused     uint64
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
	// Writes counts the socket writes (write or writev system calls) of
	// PDUs after ICResp: R2Ts, C2HData, CapsuleResps and TermReqs. Fewer
	// writes per command mean batched responses.
	Writes uint64
	// WriterHandoffs counts the times a goroutine that was writing
	// responses left the rest to the connection's writer goroutine: the
	// host's socket was full (it did not read fast enough) or a stream of
	// completions kept it writing (send.go).
	WriterHandoffs uint64
}

type counters struct {
	accepted, connections, refused, terminated, hostTerminated, dataDigestErrors, drainTimeouts, writes, writerHandoffs atomic.Uint64
}

// Stats returns the counters (each read atomically on its own). Any
// goroutine.
func (l *Listener) Stats() Stats {
	c := &l.stats
	st := Stats{
		Accepted: c.accepted.Load(), Connections: c.connections.Load(), Refused: c.refused.Load(),
		Terminated:     c.terminated.Load(),
		HostTerminated: c.hostTerminated.Load(), DataDigestErrors: c.dataDigestErrors.Load(),
		DrainTimeouts: c.drainTimeouts.Load(), Writes: c.writes.Load(),
		WriterHandoffs: c.writerHandoffs.Load(),
	}
	l.mu.Lock()
	st.Unconnected = uint64(l.unconnected)
	l.mu.Unlock()
	return st
}
