package rdma

import "sync/atomic"

// Stats are a Listener's counters since Listen.
type Stats struct {
	// Accepted counts connections (queues) accepted.
	Accepted uint64
	// Rejected counts connect requests rejected (CM reject sent).
	Rejected uint64
	// Queues is the number of queues currently connected.
	Queues uint64
	// AcceptErrors counts errors from the provider listener's Accept that
	// the accept loop retried.
	AcceptErrors uint64
	// Unconnected is the number of connections now between their connect
	// request and a successful Fabrics Connect.
	Unconnected uint64
	// UnconnectedRejected counts connect requests refused because the
	// unconnected caps (MaxUnconnectedQueues, MaxUnconnectedPerHost) were
	// reached.
	UnconnectedRejected uint64
	// ConnectTimeouts counts queues disconnected for not bringing a
	// successful Fabrics Connect within ConnectTimeout.
	ConnectTimeouts uint64
	// RegisteredBytes is the memory now registered with the device by
	// the listener's queues (receive, CQE and data buffers).
	RegisteredBytes uint64
	// GrowthDenied counts times a queue wanted more data buffers than
	// Config.MaxDataBufferBytes allowed (the command waited instead).
	GrowthDenied uint64
	// Commands counts command capsules received.
	Commands uint64
	// CommandErrors counts commands the transport answered itself with an
	// error CQE (bad SGL, truncated capsule, Connect for another queue).
	CommandErrors uint64
	// QueueErrors counts queues torn down by an error (not by a plain
	// disconnect).
	QueueErrors uint64
	// RDMAReads and RDMAWrites count data work requests posted.
	RDMAReads  uint64
	RDMAWrites uint64
	// BytesFromHost counts bytes RDMA READ from hosts (host writes);
	// BytesToHost bytes RDMA WRITTEN to hosts (host reads).
	BytesFromHost uint64
	BytesToHost   uint64
	// InCapsuleBytes counts in-capsule data bytes received.
	InCapsuleBytes uint64
	// DrainDropped counts capsules received during a graceful drain
	// (Listener.Close) and left unanswered for the host to retry.
	DrainDropped uint64
	// QuietEntries counts times an idle queue went quiet (its poll group
	// stopped polling it until it had something to do: quiet.go);
	// QuietWakes times a quiet queue was stepped again.
	QuietEntries uint64
	QuietWakes   uint64
	// Spins counts empty passes after which a poll group yielded and
	// passed again instead of sleeping (Config.PollSpins).
	Spins uint64
	// CleanSkips counts steps that left both of a busy queue's CQs
	// unpolled because its arms showed that nothing had arrived
	// (clean.go).
	CleanSkips uint64
}

// counters are the live atomics behind Stats. The listener holds the
// connection counters and the totals of released queues; each queue holds
// its own I/O counters (written only by its poller, so the hot path never
// shares a cache line with another queue) and adds them to the listener's
// when it is released.
type counters struct {
	accepted, rejected, queues                 atomic.Uint64
	acceptErrors, unconnectedRejected          atomic.Uint64
	connectTimeouts, registeredBytes           atomic.Uint64
	growthDenied                               atomic.Uint64
	commands, commandErrors, queueErrors       atomic.Uint64
	rdmaReads, rdmaWrites                      atomic.Uint64
	bytesFromHost, bytesToHost, inCapsuleBytes atomic.Uint64
	drainDropped                               atomic.Uint64
	quietEntries, quietWakes                   atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Accepted:       c.accepted.Load(),
		Rejected:       c.rejected.Load(),
		Queues:         c.queues.Load(),
		Commands:       c.commands.Load(),
		CommandErrors:  c.commandErrors.Load(),
		QueueErrors:    c.queueErrors.Load(),
		RDMAReads:      c.rdmaReads.Load(),
		RDMAWrites:     c.rdmaWrites.Load(),
		BytesFromHost:  c.bytesFromHost.Load(),
		BytesToHost:    c.bytesToHost.Load(),
		InCapsuleBytes: c.inCapsuleBytes.Load(),
		DrainDropped:   c.drainDropped.Load(),
	}
}

// addIO adds c's per-queue I/O counters to dst.
func (c *counters) addIO(dst *counters) {
	dst.commands.Add(c.commands.Load())
	dst.commandErrors.Add(c.commandErrors.Load())
	dst.queueErrors.Add(c.queueErrors.Load())
	dst.rdmaReads.Add(c.rdmaReads.Load())
	dst.rdmaWrites.Add(c.rdmaWrites.Load())
	dst.bytesFromHost.Add(c.bytesFromHost.Load())
	dst.bytesToHost.Add(c.bytesToHost.Load())
	dst.inCapsuleBytes.Add(c.inCapsuleBytes.Load())
	dst.drainDropped.Add(c.drainDropped.Load())
}
