package tcp

import (
	"sync/atomic"

	"github.com/rdmablk/rdmablk/internal/tcpzc"
)

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
	// ZeroCopySends counts the sends that went out with io_uring's
	// zero-copy sendmsg (writes carrying at least ZeroCopySendMin bytes
	// of read data), ZeroCopyBytes their bytes. ZeroCopyCopied counts the
	// notices in which the kernel said it copied the data after all
	// (Linux ≥ 6.2 reports it: a loopback peer, a device without
	// scatter-gather). ZeroCopyAbandoned counts connections that ended
	// before the kernel let go of their memory: it stays allocated until
	// it does (a peer that stopped acknowledging). ZeroCopyOverdue
	// counts sends whose completion the kernel did not post inline
	// within tcpzc's bound: their connections ended (EIO) instead of
	// waiting on.
	ZeroCopySends, ZeroCopyBytes, ZeroCopyCopied, ZeroCopyAbandoned, ZeroCopyOverdue uint64
	// SpinReads counts the PDU reads an I/O queue's reader made while it
	// spun instead of parking (Config.PollSpins); SpinYields the
	// spins it ended early because another descriptor of the process's
	// parked set was ready (a goroutine waiting for it needs the runtime's
	// poll, which a spinner holds off).
	// SpinRunOuts counts the spins that used their whole budget and
	// parked: many of them, against few SpinReads, say the hosts pause
	// longer than a spin (the budget then shrinks, and is tried whole
	// again every 64 wake-ups).
	SpinReads, SpinYields, SpinRunOuts uint64
	// ZeroCopyOff: the kernel cannot send zero-copy (no io_uring or no
	// IORING_OP_SENDMSG_ZC, Linux < 6.1); every write copies.
	ZeroCopyOff bool
}

type counters struct {
	accepted, connections, refused, terminated, hostTerminated, dataDigestErrors, drainTimeouts, writes, writerHandoffs atomic.Uint64
	zc                                                                                                                  tcpzc.Counters
	spinReads, spinYields, spinRunOuts                                                                                  atomic.Uint64
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
		ZeroCopySends:  c.zc.Sends.Load(), ZeroCopyBytes: c.zc.Bytes.Load(), ZeroCopyCopied: c.zc.Copied.Load(),
		ZeroCopyAbandoned: c.zc.Abandoned.Load(), ZeroCopyOverdue: c.zc.Overdue.Load(), ZeroCopyOff: l.zcBroken.Load(),
		SpinReads: c.spinReads.Load(), SpinYields: c.spinYields.Load(), SpinRunOuts: c.spinRunOuts.Load(),
	}
	l.mu.Lock()
	st.Unconnected = uint64(l.unconnected)
	l.mu.Unlock()
	return st
}
