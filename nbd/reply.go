package nbd

import "encoding/binary"

// Replies: a completed request is appended to the connection's pending
// list; the goroutine that finds no writer active becomes the writer and
// writes everything pending — headers and READ data of several replies in
// one vectored write — until the list is empty, so completions that
// arrive while a write is under way are batched into the next one and
// cost no extra wake-up. A backend that completes a run of requests on
// one goroutine (CompleteMore ... Complete) has the run written at its
// end in one write. The writer then recycles the buffers and frees
// the slots. (Options.writerGoroutine instead hands the batches to one
// writer goroutine per connection: one more wake-up per batch; kept for
// the benchmark that compares the two.)

// finish records r's result and replies (see above), unless more (a
// run of completions continues on this goroutine; its last one writes).
// Any goroutine.
func (cs *conn) finish(r *Request, errno uint32, more bool) {
	cs.s.inFlight.Add(-1)
	if errno != 0 {
		cs.s.errors.Add(1)
	}
	r.errno = errno
	binary.BigEndian.PutUint32(r.hdr[0:], magicSimpleRepl)
	binary.BigEndian.PutUint32(r.hdr[4:], errno)
	binary.BigEndian.PutUint64(r.hdr[8:], r.cookie)
	cs.wmu.Lock()
	cs.pend = append(cs.pend, r)
	if l := cs.loop; l != nil && l.deferring {
		// The poll loop writes it (loop_linux.go).
		cs.wmu.Unlock()
		l.poke()
		return
	}
	if cs.writing || more {
		cs.wmu.Unlock()
		return
	}
	cs.writing = true
	if cs.wake != nil {
		cs.wmu.Unlock()
		cs.wake <- struct{}{}
		return
	}
	cs.writeAll()
}

// writePending writes the queued replies unless a writer is at work. The
// poll loop's (the only writer while it runs).
func (cs *conn) writePending() {
	cs.wmu.Lock()
	if cs.writing || len(cs.pend) == 0 {
		cs.wmu.Unlock()
		return
	}
	cs.writing = true
	cs.writeAll()
}

// writeAll writes batches until none is pending. Called with wmu held
// and writing set; returns with wmu released and writing clear.
func (cs *conn) writeAll() {
	for len(cs.pend) > 0 {
		batch := cs.pend
		cs.pend = cs.spare[:0]
		cs.wmu.Unlock()
		cs.writeBatch(batch)
		cs.wmu.Lock()
		cs.spare = batch[:0]
	}
	cs.writing = false
	cs.wmu.Unlock()
}

// writer is the reply goroutine of Options.writerGoroutine.
func (cs *conn) writer() {
	defer cs.wg.Done()
	for range cs.wake {
		cs.wmu.Lock()
		cs.writeAll()
	}
}

// writeBatch writes the replies of batch in one vectored write (unless an
// earlier write failed), then recycles their buffers and slots.
func (cs *conn) writeBatch(batch []*Request) {
	if cs.werr == nil {
		iov := cs.iov[:0]
		for _, r := range batch {
			iov = append(iov, r.hdr[:])
			if r.typ == cmdRead && r.errno == 0 {
				iov = append(iov, *r.buf)
			}
		}
		cs.iov, cs.wb = iov, iov
		var err error
		if v, ok := cs.c.(vectorWriter); ok {
			_, err = v.writeBuffers(cs.wb)
		} else {
			_, err = cs.wb.WriteTo(cs.c)
		}
		if err != nil {
			cs.werr = err
			cs.c.Close() // the reader stops too
		}
	}
	for _, r := range batch {
		cs.release(r)
	}
}

// vectorWriter is a connection that writes several buffers in one system
// call itself (sockConn; net.Buffers.WriteTo does for the net package's
// connections only).
type vectorWriter interface {
	writeBuffers(bufs [][]byte) (int64, error)
}
