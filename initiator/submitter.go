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
	// owns is the queue whose completions the caller waits for itself
	// (Arm), until Release or a change of queue; waker asks the caller
	// to Arm again (SetWaker).
	owns  *queueMux
	waker func()
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
	if o := b.owns; o != nil && o != m {
		// The path changed: the old queue's goroutine waits for its CQ
		// again.
		b.owns = nil
		o.disown(b)
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
	m.flush(b)
}

// SetWaker makes the caller wait for completions itself: from now on
// it must call Arm after every Flush before it sleeps (Flush no longer
// wakes the queue's goroutine for what it leaves in flight: Arm does
// when the caller cannot wait for it), until Release. wake is how the
// queue asks the caller to run its loop again (Flush, Arm) when
// commands it did not arm for are in flight on a queue it waits for
// (another caller's, or ones that started after it armed); it is called
// from the queue's goroutine and must not block or call back into the
// Submitter. Set it before the first Submit.
func (b *Submitter) SetWaker(wake func()) { b.waker = wake }

// Arm lets the caller wait for the queue's completions itself, in its
// own poll set, instead of the queue's goroutine reaping them and
// waking the caller: call it after Flush, before sleeping. With commands
// in flight on an RDMA queue whose CQ signals a descriptor
// (verbs.FDNotifier) it arms the CQ, finishes what completed before the
// arm (requests may complete inside Arm, as in Flush) and returns the
// descriptor to wait for (readable: POLLIN) with a key naming it; the
// caller must then Flush once the descriptor is readable or its wait
// ends otherwise, and pass signalled = true to the next Arm if it was
// readable. The same key is the same descriptor: a poll still armed for
// it need not be armed again; a new key means the old descriptor is no
// longer used (its poll may be cancelled: after a reconnect its number
// may name another file). fd < 0: nothing to wait for on a descriptor
// now — with key 0 none at all (a dead controller, NVMe/TCP, no waker,
// another owner: the queue's goroutine reaps, as without Arm; a poll of
// an earlier descriptor should be cancelled), with the current key
// nothing in flight. The CQ stays with the caller until Release or until
// its requests take another queue (a path change). Arm takes the queue's
// lock: never call it from a request's Done or Notify (they run under it).
func (b *Submitter) Arm(signalled bool) (fd int, key uint64) {
	m := b.last
	if m == nil {
		return -1, 0
	}
	return m.arm(b, signalled)
}

// Release ends SetWaker: the queue's goroutine takes the completions
// back (the caller stops waiting for the descriptor; requests in flight
// still complete) and Flush wakes it again for what it leaves. Call it
// before the caller stops looping.
func (b *Submitter) Release() {
	if o := b.owns; o != nil {
		b.owns = nil
		o.disown(b) // after it no queue goroutine reads b.waker
	}
	b.waker = nil
	if m := b.last; m != nil {
		m.kick()
	}
}
