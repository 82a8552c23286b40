package soft

import (
	"fmt"
	"net"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// discLinger bounds how long a disconnecting link waits for the peer's DISC
// before the connection is closed anyway.
const discLinger = 2 * time.Second

// linkParams are the connection attributes negotiated by the CM exchange.
type linkParams struct {
	ord      int   // READs this side may have outstanding
	ird      int   // READs this side serves concurrently
	rnrRetry uint8 // RNR retries for this side's requests (7 = forever)
	onDown   func(error)
}

// attach binds the established connection to the QP, moves it to RTS and
// starts its engines. fr and fw are the handshake's reader and writer (fr
// may hold bytes the peer sent after the handshake).
func (q *qp) attach(conn net.Conn, fr *frameReader, fw *frameWriter, lp linkParams) error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("%w: queue pair", verbs.ErrClosed)
	}
	if q.link != linkNone {
		q.mu.Unlock()
		return fmt.Errorf("%w: queue pair already connected", verbs.ErrInvalid)
	}
	q.conn, q.fr, q.fw = conn, fr, fw
	q.ord, q.ird, q.rnrRetry, q.onDown = lp.ord, lp.ird, lp.rnrRetry, lp.onDown
	q.resp = make([]respItem, 2*lp.ird+4)
	q.rnrTimer = time.AfterFunc(time.Hour, q.rnrFire)
	q.rnrTimer.Stop()
	if q.state == qpInit {
		q.state = qpRTS
	}
	q.link = linkUp
	q.engines = 2
	q.engDone = make(chan struct{})
	q.mu.Unlock()
	p := q.dev.p
	txOK := p.spawn(q.txLoop)
	rxOK := p.spawn(q.rxLoop)
	if !txOK || !rxOK {
		q.linkFailed(fmt.Errorf("%w: provider closed", verbs.ErrDeviceRemoved))
		if !txOK {
			q.engineDone()
		}
		if !rxOK {
			q.engineDone()
		}
		return fmt.Errorf("%w: provider closed", verbs.ErrDeviceRemoved)
	}
	q.ring()
	return nil
}

// shutdown ends the connection from this side. With disc, a DISC frame is
// sent after pending responses and the peer answers with its own; without,
// the connection is closed at once. The QP moves to the error state and
// onDown(err) reports the end to the ConnID. It does nothing unless the
// link is up.
func (q *qp) shutdown(disc bool, err error) {
	q.mu.Lock()
	if q.link != linkUp {
		q.mu.Unlock()
		return
	}
	conn := q.conn
	if disc {
		q.link = linkClosing
		q.discPending = true
		q.linger = time.AfterFunc(discLinger, func() { conn.Close() })
	} else {
		q.link = linkDown
	}
	q.enterErrorLocked()
	onDown := q.onDown
	q.mu.Unlock()
	if !disc {
		conn.Close()
	}
	q.ring()
	onDown(err)
}

// onDisc handles the peer's DISC: the QP moves to the error state and a
// DISC goes back, unless this side started the exchange.
func (q *qp) onDisc() {
	q.mu.Lock()
	if q.link != linkUp {
		q.mu.Unlock()
		return
	}
	q.link = linkClosing
	q.discPending = true
	q.enterErrorLocked()
	onDown := q.onDown
	q.mu.Unlock()
	q.ring()
	onDown(verbs.ErrDisconnected)
}

// linkFailed handles an I/O error or a protocol violation on the link. An
// unexpected failure looks like a cable pull: the oldest transmitted WR
// completes with WCRetryExcErr (the transport retries ran out), the rest
// flush, and the connection is closed.
func (q *qp) linkFailed(cause error) {
	_ = cause // kept for debugging; the application sees ErrDisconnected
	q.mu.Lock()
	wasUp := q.link == linkUp
	q.link = linkDown
	var onDown func(error)
	if wasUp {
		// The head WR was transmitted (perhaps to be retransmitted after
		// an RNR NAK): its retries run out.
		if q.state != qpError && q.sqAck < q.sentHigh {
			if s := q.slot(q.sqAck); !s.failed {
				s.failed, s.status = true, verbs.WCRetryExcErr
			}
		}
		q.enterErrorLocked()
		onDown = q.onDown
	}
	conn := q.conn
	q.mu.Unlock()
	conn.Close()
	q.ring()
	if onDown != nil {
		onDown(verbs.ErrDisconnected)
	}
}

// engineDone is called by each engine as it exits; the last one closes the
// connection.
func (q *qp) engineDone() {
	q.mu.Lock()
	q.engines--
	last := q.engines == 0
	if last {
		q.link = linkDown
		if q.linger != nil {
			q.linger.Stop()
		}
		if q.state == qpError {
			q.flushLocked()
		}
		// Responses still queued can never be sent: drop them, and the
		// references their READ responses hold on MRs (an MR's Close
		// waits for those, and the QP may be destroyed after it).
		q.dropRespLocked()
	}
	conn, done := q.conn, q.engDone
	q.mu.Unlock()
	if last {
		conn.Close()
		close(done)
	}
}

// waitEngines blocks until both engines have exited (immediately if the QP
// was never connected).
func (q *qp) waitEngines() {
	q.mu.Lock()
	done := q.engDone
	q.mu.Unlock()
	if done != nil {
		<-done
	}
}

// rnrFire ends an RNR wait: the tx engine retransmits from the NAKed WR.
func (q *qp) rnrFire() {
	q.mu.Lock()
	q.rnrWait = false
	q.mu.Unlock()
	q.ring()
}

// rnrDelay is the wait before the n-th RNR retry: 20µs doubling, at most 4ms.
func rnrDelay(n uint8) time.Duration {
	d := 20 * time.Microsecond << min(n, 8)
	return min(d, 4*time.Millisecond)
}

// closeWrite half-closes conn when it supports it, so the peer reads EOF
// after the DISC frame.
func closeWrite(conn net.Conn) {
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
