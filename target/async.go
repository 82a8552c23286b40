package target

import "github.com/rdmablk/rdmablk/blockdev"

// submitAsync hands a parsed Read or Write to a backend's asynchronous
// path (blockdev.Async: the file backend's io_uring ring) instead of a
// worker: the queue's goroutine submits and returns at once, and the
// backend's completion goroutine finishes the request (IODone). The data
// buffer is the transport's (Request.Data) — no copy either way. When the
// transport gave the queue its data region (SetDataRegion) and the
// backend takes fixed buffers, the I/O names that registration
// (READ_FIXED / WRITE_FIXED, see fixed.go).
//
// It reports false when the backend did not take the I/O (ring full,
// buffer not suited to its fast path, pool stopping); the caller then uses
// the worker pool. The pool's gate counts the I/O like a worker's, so
// Target.Close waits for it.
func (q *Queue) submitAsync(r *Request, a blockdev.Async) bool {
	p := q.t.pool
	if !p.gate.enter() {
		return false
	}
	rc := &r.core
	rc.req = r
	rc.state = stateSubmitted
	if q.batching {
		q.plug(a)
	}
	var fl blockdev.WriteFlags
	if rc.fua {
		fl = blockdev.WriteFUA
	}
	var ok bool
	if f := rc.ns.fixed; f != nil && q.region != nil {
		// The transport's memory as io_uring fixed buffers (fixed.go);
		// reg 0 or a buffer outside it: the backend uses plain ops.
		reg := q.fixedFor(f)
		if rc.kind == kindRead {
			ok = f.SubmitReadFixed(rc.vec[0], rc.slba, reg, rc)
		} else {
			ok = f.SubmitWriteFixed(rc.vec[0], rc.slba, fl, reg, rc)
		}
	} else if rc.kind == kindRead {
		ok = a.SubmitRead(rc.vec[0], rc.slba, rc)
	} else {
		ok = a.SubmitWrite(rc.vec[0], rc.slba, fl, rc)
	}
	if !ok {
		rc.state = stateExecuting
		rc.req = nil
		p.gate.leave()
	}
	return ok
}

// IODone implements blockdev.Completion for an I/O started by
// submitAsync. It runs on the backend's completion goroutine and never
// blocks (QueueConn.Complete does not).
func (rc *requestCore) IODone(err error) {
	r, q := rc.req, rc.q
	p := q.t.pool
	st := rc.status(err)
	// After completeAsync the transport owns r again: rc is not touched.
	q.completeAsync(r, st)
	p.gate.leave()
}

var _ blockdev.Completion = (*requestCore)(nil)

// maxPlugged bounds the backends one queue plugs per batch (a queue
// rarely touches more than one namespace per poll); past it, submissions
// go to the device at once.
const maxPlugged = 4

// BeginBatch tells the core that a burst of Execute calls follows (the
// commands one poll of the transport returned). Until EndBatch, reads and
// writes on backends that batch (blockdev.AsyncBatcher) may be held back
// and handed to the device together. Transport goroutine only; optional:
// a transport that never calls it gets every I/O submitted at once.
func (q *Queue) BeginBatch() { q.batching = true }

// EndBatch ends the burst: every I/O held back since BeginBatch goes to
// its device now. Transport goroutine only. It never blocks on I/O.
func (q *Queue) EndBatch() {
	q.batching = false
	for i := range q.nPollers {
		q.pollers[i] = nil
	}
	q.nPollers = 0
	for i := range q.nPlugged {
		b := q.plugged[i]
		b.Unplug()
		if p, ok := b.(blockdev.Poller); ok {
			q.pollers[q.nPollers] = p
			q.nPollers++
		}
		q.plugged[i] = nil
	}
	q.nPlugged = 0
}

// Poll finishes, on the calling goroutine, the I/O that the backends of
// the last batch have already completed (blockdev.Poller) — their
// completions go back to the transport through QueueConn.Complete, from
// inside Poll — and returns how many it finished. For a transport that
// spins instead of sleeping while its I/O runs; it never blocks.
// Transport goroutine only, outside a batch.
func (q *Queue) Poll() int {
	n := 0
	for i := range q.nPollers {
		n += q.pollers[i].Poll()
	}
	return n
}

// plug plugs a's backend once per batch, when it batches.
func (q *Queue) plug(a blockdev.Async) {
	b, ok := a.(blockdev.AsyncBatcher)
	if !ok {
		return
	}
	for i := range q.nPlugged {
		if q.plugged[i] == b {
			return
		}
	}
	if q.nPlugged == maxPlugged {
		return
	}
	b.Plug()
	q.plugged[q.nPlugged] = b
	q.nPlugged++
}
