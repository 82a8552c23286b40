package target

import "github.com/rdmablk/rdmablk/blockdev"

// submitAsync hands a parsed Read or Write to a backend's asynchronous
// path (blockdev.Async: the file backend's io_uring ring) instead of a
// worker: the queue's goroutine submits and returns at once, and the
// backend's completion goroutine finishes the request (IODone). The data
// buffer is the transport's (Request.Data) — no copy either way.
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
	var ok bool
	if rc.kind == kindRead {
		ok = a.SubmitRead(rc.vec[0], rc.slba, rc)
	} else {
		var fl blockdev.WriteFlags
		if rc.fua {
			fl = blockdev.WriteFUA
		}
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
	st := backendStatus(err, rc.kind == kindRead)
	// After completeAsync the transport owns r again: rc is not touched.
	q.completeAsync(r, st)
	p.gate.leave()
}

var _ blockdev.Completion = (*requestCore)(nil)
