package soft

import (
	"context"
	"fmt"
	"net"

	"github.com/rdmablk/rdmablk/verbs"
)

// InjectQPError moves a soft QP to the error state, as an asynchronous QP
// error (IBV_EVENT_QP_FATAL) would: everything outstanding completes with
// WCWRFlushErr and later posts flush. The connection stays up, so the peer
// is not told directly: its next request to this QP completes with
// WCRetryExcErr and moves the peer QP to the error state, as a requester
// whose transport retries ran out would on hardware. A peer that only
// waits for receives notices nothing (keep-alives must catch that).
func InjectQPError(qpi verbs.QueuePair) error {
	q, ok := qpi.(*qp)
	if !ok || q == nil {
		return fmt.Errorf("%w: not a soft queue pair", verbs.ErrInvalid)
	}
	q.injectError()
	return nil
}

// CutLink pulls the cable of a connected soft ID: the transport connection
// fails at once in both directions, without DISC. Both sides see their QP
// move to the error state (the oldest unacknowledged send WR completes with
// WCRetryExcErr, the rest flush) and Done close with ErrDisconnected.
func CutLink(idi verbs.ConnID) error {
	id, ok := idi.(*connID)
	if !ok || id == nil {
		return fmt.Errorf("%w: not a soft connection ID", verbs.ErrInvalid)
	}
	id.mu.Lock()
	q := id.qp
	id.mu.Unlock()
	if q == nil {
		return fmt.Errorf("%w: ID has no QP", verbs.ErrInvalid)
	}
	q.mu.Lock()
	conn := q.conn
	up := q.link == linkUp
	q.mu.Unlock()
	if !up || conn == nil {
		return fmt.Errorf("%w: ID is not connected", verbs.ErrInvalid)
	}
	switch c := conn.(type) {
	case *memConn:
		c.cut()
	case *net.TCPConn:
		c.SetLinger(0) // RST instead of FIN
		c.Close()
	default:
		conn.Close()
	}
	return nil
}

// QPStats are counters of a soft QP, for tests.
type QPStats struct {
	// ORD and IRD negotiated at connect time.
	ORD, IRD int
	// ReadsOutstandingMax is the most RDMA READs this QP ever had
	// outstanding as requester (never above ORD).
	ReadsOutstandingMax int
	// RNRNaksReceived counts RNR NAKs received as requester;
	// RNRNaksSent counts those sent as responder.
	RNRNaksReceived, RNRNaksSent uint64
}

// Stats returns the counters of a soft QP.
func Stats(qpi verbs.QueuePair) (QPStats, error) {
	q, ok := qpi.(*qp)
	if !ok || q == nil {
		return QPStats{}, fmt.Errorf("%w: not a soft queue pair", verbs.ErrInvalid)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return QPStats{
		ORD: q.ord, IRD: q.ird,
		ReadsOutstandingMax: q.readsHigh,
		RNRNaksReceived:     q.rnrNaksRecv,
		RNRNaksSent:         q.rnrNaksSent,
	}, nil
}

// AwaitRNR blocks until the soft QP has received at least n RNR NAKs as
// requester, the QP enters the error state, or ctx ends.
func AwaitRNR(ctx context.Context, qpi verbs.QueuePair, n uint64) error {
	q, ok := qpi.(*qp)
	if !ok || q == nil {
		return fmt.Errorf("%w: not a soft queue pair", verbs.ErrInvalid)
	}
	for {
		q.mu.Lock()
		if q.rnrNaksRecv >= n {
			q.mu.Unlock()
			return nil
		}
		if q.state == qpError {
			q.mu.Unlock()
			return fmt.Errorf("%w: QP in error state after %d RNR NAKs", verbs.ErrQPState, q.rnrNaksRecv)
		}
		if q.watch == nil {
			q.watch = make(chan struct{})
		}
		w := q.watch
		q.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
