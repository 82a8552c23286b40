package initiator

import "fmt"

// Submitter submits a Session's requests to one I/O queue in batches,
// for a caller with its own queue affinity whose requests arrive in
// bursts (a ublk queue: one burst per io_uring wake-up). Submit leaves a
// request's commands in the queue's intake without waking the queue's
// goroutine; Flush, after the burst, does that goroutine's work on the
// caller's goroutine when it is free — takes the intake, issues the
// commands, posts them to the transport at once, and finishes the
// commands that have completed meanwhile, whose requests complete
// (Done/Notify) inside Flush — so a request costs no goroutine hand-off
// on its way out, and completions the caller reaps itself none on their
// way back. Whatever Flush leaves in flight the queue's goroutine
// finishes as usual (it is woken when it sleeps idle), and replays,
// reconnects and path changes behave as for Session.Submit.
//
// A Submitter belongs to one goroutine at a time. Make one with
// Session.Submitter.
type Submitter struct {
	s     *Session
	queue uint16 // Request.Queue of every request: queue index + 1

	// pending is the queue with commands held for Flush; last the queue
	// Flush drives when nothing is pending (to finish completions).
	pending, last *queueMux
}

// Submitter returns a Submitter for I/O queue q (0-based; modulo the
// queue count of each path's controller).
func (s *Session) Submitter(q int) (*Submitter, error) {
	if q < 0 || q >= 1<<16-1 {
		return nil, fmt.Errorf("%w: queue %d", ErrInvalid, q)
	}
	return &Submitter{s: s, queue: uint16(q + 1)}, nil
}

// Submit starts r as Session.Submit does, on the Submitter's queue
// (r.Queue is set to it), except that its commands wait in the queue's
// intake until the next Flush. It never blocks; r may complete inside
// Submit (a request refused at once) or inside a later Flush. It returns
// ErrInvalid only when r is nil or has neither Done nor Notify.
func (b *Submitter) Submit(r *Request) error {
	if r == nil || r.Done == nil && r.Notify == nil {
		return fmt.Errorf("%w: request without a Done channel or Notify", ErrInvalid)
	}
	r.Queue = b.queue
	b.s.submitVia(r, b)
	return nil
}

// note records that a command routed by Submit waits in m's intake. A
// queue held for an earlier Flush that is no longer the one in use (the
// path changed during the burst) is handed to its goroutine now.
func (b *Submitter) note(m *queueMux) {
	if p := b.pending; p != nil && p != m {
		p.kick()
	}
	b.pending, b.last = m, m
}

// Flush issues what Submit held and finishes what has completed on the
// queue, on the caller's goroutine, or wakes the queue's goroutine when
// it is at work. Requests may complete inside Flush. It never waits for
// a completion; like the queue's goroutine it may wait for the transport
// to take what it posts (an NVMe/TCP socket's send buffer) and, on a
// controller found lost, for its connections to be torn down.
func (b *Submitter) Flush() {
	m := b.pending
	if m == nil {
		m = b.last
	}
	b.pending = nil
	if m == nil {
		return
	}
	if m.c.isDead() {
		b.last = nil // the controller's goroutine fails or replays what is left
		m.kick()
		return
	}
	m.flush()
}
