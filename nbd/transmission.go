package nbd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// conn is the transmission state of one connection. Its reader goroutine
// (the one running transmit) owns the free-slot channel's receiving end
// and submits; replies are written by whichever goroutine completes a
// request (see finish).
type conn struct {
	s *Server
	c net.Conn
	e *Export
	q AsyncQueue // nil: every request runs the blocking Backend methods

	kicker Kicker // q's, if it batches
	held   bool   // kicker holds requests submitted since the last Kick
	loop   *loop  // the poll loop (loop_linux.go), nil without one

	reqs []Request  // one per slot
	free chan int32 // slots not in flight; the in-flight bound
	wg   sync.WaitGroup

	wmu     sync.Mutex    // guards writing and pend
	writing bool          // a goroutine is writing replies (it owns batch, iov, werr)
	pend    []*Request    // completed, waiting for the writer
	spare   []*Request    // the writer's other batch slice
	wake    chan struct{} // Options.writerGoroutine only: work for the writer

	iov  net.Buffers // reused vector of the batch being written
	wb   net.Buffers // consumed by WriteTo
	werr error       // first write error; owned by the writer
}

// transmit reads requests from c until NBD_CMD_DISC, a read error or a
// protocol violation, starts each (see dispatch), and returns after every
// started request has replied.
func (s *Server) transmit(c net.Conn, e *Export) {
	var q AsyncQueue
	if ab, ok := e.Backend.(AsyncBackend); ok {
		var err error
		if q, err = ab.OpenQueue(s.maxIn); err != nil {
			s.log.Warn("nbd: backend refused a queue; closing connection", "err", err)
			return
		}
	}
	if _, ok := q.(Poller); ok && !s.writerGoroutine {
		// A socket of the net package is served by descriptor from
		// here on, so that the poll loop can wait for it.
		if sc := s.adopt(c); sc != nil {
			defer s.unadopt(sc)
			c = sc
		}
	}
	release, ok := holdConn(c)
	if !ok {
		if q != nil {
			q.Close()
		}
		return
	}
	defer release() // after the drain below: no reply is written after it
	cs := &conn{s: s, c: c, e: e, q: q,
		reqs:  make([]Request, s.maxIn),
		free:  make(chan int32, s.maxIn),
		pend:  make([]*Request, 0, s.maxIn),
		spare: make([]*Request, 0, s.maxIn),
		iov:   make(net.Buffers, 0, 2*s.maxIn),
	}
	for i := range cs.reqs {
		cs.reqs[i].c, cs.reqs[i].Slot = cs, i
		cs.free <- int32(i)
	}
	if s.writerGoroutine {
		cs.wake = make(chan struct{}, 1)
		cs.wg.Add(1)
		go cs.writer()
	}
	cs.kicker, _ = cs.q.(Kicker)
	cs.loop = startLoop(cs)
	// Requests are read through a buffer: a burst the kernel sent
	// together costs one read, and the reader knows when the burst ends
	// (nothing whole left in the buffer) to Kick a batching queue then,
	// before it blocks.
	var src io.Reader = c
	if cs.loop != nil {
		src = cs.loop // reads without blocking; sleeps in the loop
	}
	rd := bufio.NewReaderSize(src, readBufferSize)
	defer func() {
		cs.kick() // drain waits for every request: none may stay held
		cs.drain()
	}()
	var hdr [requestSize]byte
	for {
		if rd.Buffered() < requestSize {
			cs.kick()
		}
		if _, err := io.ReadFull(rd, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("nbd read request", "err", err)
			}
			return
		}
		if m := binary.BigEndian.Uint32(hdr[0:]); m != magicRequest {
			s.log.Warn("nbd: bad request magic; closing connection", "magic", fmt.Sprintf("%#x", m))
			return
		}
		typ := binary.BigEndian.Uint16(hdr[6:])
		length := binary.BigEndian.Uint32(hdr[24:])
		if typ == cmdDisc {
			return
		}
		if typ == cmdWrite && length > MaxRequest {
			// The payload cannot be skipped safely at this size: the
			// protocol lets the server hang up.
			s.log.Warn("nbd: write larger than the advertised maximum; closing connection", "len", length)
			return
		}
		var slot int32
		select {
		case slot = <-cs.free:
		default: // every slot in flight: what is held must go before the wait
			cs.kick()
			if cs.loop != nil {
				slot = cs.loop.takeSlot()
			} else {
				slot = <-cs.free
			}
		}
		r := &cs.reqs[slot]
		r.typ, r.length = typ, length
		r.flags = binary.BigEndian.Uint16(hdr[4:])
		r.cookie = binary.BigEndian.Uint64(hdr[8:])
		r.off = binary.BigEndian.Uint64(hdr[16:])
		switch typ {
		case cmdWrite:
			r.payload(int(length))
			if rd.Buffered() < int(length) {
				cs.kick()
			}
			if _, err := io.ReadFull(rd, *r.buf); err != nil {
				cs.release(r)
				return
			}
		case cmdRead:
			if length <= MaxRequest {
				r.payload(int(length))
			}
		}
		s.inFlight.Add(1)
		s.requests.Add(1)
		cs.held = cs.dispatch(r) && cs.kicker != nil || cs.held
	}
}

// kick issues what the Kicker holds. Reader goroutine only.
func (cs *conn) kick() {
	if cs.held {
		cs.held = false
		cs.kicker.Kick()
	}
}

// readBufferSize is each connection's read buffer: a few 4 KiB writes or
// hundreds of request headers; a larger payload is read past it.
const readBufferSize = 32 << 10

// dispatch starts r: on the AsyncQueue when the backend has one and r
// needs no emulation, else on a goroutine running the blocking Backend
// methods (Export.execute). It reports whether r went to the queue.
func (cs *conn) dispatch(r *Request) bool {
	if cs.q != nil && cs.asyncable(r) {
		cs.q.Submit(r)
		return true
	}
	cs.wg.Add(1)
	go cs.runBlocking(r)
	return false
}

// asyncable fills r's exported fields and reports whether the AsyncQueue
// can execute r as it is: in range, aligned, not read-only, and not one
// of the operations the server emulates.
func (cs *conn) asyncable(r *Request) bool {
	e := cs.e
	end := r.off + uint64(r.length)
	if end < r.off || end > uint64(e.Backend.Size()) {
		return false // the error reply comes from execute
	}
	bs := int64(e.bs())
	off, n := int64(r.off), int64(r.length)
	ok := off%bs == 0 && n%bs == 0 && n > 0
	fua := r.flags&cmdFlagFUA != 0
	r.Op, r.FUA, r.Off, r.Len, r.Data = 0, false, off, 0, nil
	switch r.typ {
	case cmdRead:
		if !ok || r.buf == nil {
			return false
		}
		r.Op, r.Data = OpRead, *r.buf
	case cmdWrite:
		if !ok || e.ReadOnly {
			return false
		}
		if _, f := e.Backend.(FUAWriter); fua && !f {
			return false // WriteAt then Flush
		}
		r.Op, r.Data, r.FUA = OpWrite, *r.buf, fua
	case cmdFlush:
		if _, f := e.Backend.(Flusher); !f {
			return false // nothing to flush: execute replies at once
		}
		r.Op, r.Off = OpFlush, 0
	case cmdTrim:
		if _, t := e.Backend.(Trimmer); !t || fua || e.ReadOnly {
			return false
		}
		// Whole blocks inside the range only (trim is advisory).
		start := off + (bs-off%bs)%bs
		stop := off + n - (off+n)%bs
		if stop <= start {
			return false // nothing to deallocate: execute replies at once
		}
		r.Op, r.Off, r.Len = OpDeallocate, start, stop-start
	case cmdWriteZeroes:
		if _, z := e.Backend.(Zeroer); !z || !ok || e.ReadOnly {
			return false
		}
		r.Op, r.Len, r.FUA = OpWriteZeroes, n, fua
	default:
		return false
	}
	return true
}

// runBlocking executes r with the blocking Backend methods and replies.
func (cs *conn) runBlocking(r *Request) {
	defer cs.wg.Done()
	cs.finish(r, cs.e.execute(r), false)
}

// drain waits until every slot is free again (every started request has
// replied) and the reply writer is done, then closes the AsyncQueue.
func (cs *conn) drain() {
	if cs.loop != nil {
		cs.loop.stop() // the loop writes the replies until every slot is free
	}
	for range cs.s.maxIn {
		<-cs.free
	}
	if cs.wake != nil {
		close(cs.wake)
	}
	cs.wg.Wait()
	if cs.q != nil {
		cs.q.Close()
	}
	for i := range cs.reqs {
		if k := cs.reqs[i].keep; k != nil {
			putBuf(k)
			cs.reqs[i].keep = nil
		}
	}
}

// keepMax is the largest payload buffer a slot keeps for its next
// request (larger ones go back to the pool at once).
const keepMax = 256 << 10

// payload gives r a buffer of n bytes (n ≤ MaxRequest): the one its slot
// kept from an earlier request when it is of n's size class, else one
// from the pool. A steady load of one request size touches no pool.
func (r *Request) payload(n int) {
	if k := r.keep; k != nil && classOf(cap(*k)) == classOf(n) {
		*k = (*k)[:n]
		r.buf, r.keep = k, nil
		return
	}
	r.buf = getBuf(n)
}

// release keeps or recycles r's buffer and frees its slot.
func (cs *conn) release(r *Request) {
	if b := r.buf; b != nil {
		r.buf = nil
		if cap(*b) <= keepMax {
			if r.keep != nil {
				putBuf(r.keep)
			}
			r.keep = b
		} else {
			putBuf(b)
		}
	}
	r.Data = nil
	cs.free <- int32(r.Slot)
}

// execute runs one request against the export with the blocking Backend
// methods and returns the reply's errno (0: success).
func (e *Export) execute(r *Request) uint32 {
	size := uint64(e.Backend.Size())
	end := r.off + uint64(r.length)
	inRange := end >= r.off && end <= size
	write := r.typ == cmdWrite || r.typ == cmdTrim || r.typ == cmdWriteZeroes
	if write && e.ReadOnly {
		return errPerm
	}
	fua := r.flags&cmdFlagFUA != 0
	switch r.typ {
	case cmdRead:
		if r.buf == nil {
			return errOverflow
		}
		if !inRange {
			return errInval
		}
		return errnoOrZero(e.readAt(*r.buf, int64(r.off)))
	case cmdWrite:
		if !inRange {
			return errNoSpc
		}
		return errnoOrZero(e.writeAt(*r.buf, int64(r.off), fua))
	case cmdFlush:
		return errnoOrZero(e.flush())
	case cmdTrim:
		if !inRange {
			return errInval
		}
		return errnoOrZero(e.trim(int64(r.off), int64(r.length), fua))
	case cmdWriteZeroes:
		if !inRange {
			return errNoSpc
		}
		return errnoOrZero(e.zero(int64(r.off), int64(r.length), fua))
	}
	return errInval // CACHE (not advertised), BLOCK_STATUS, unknown
}

func errnoOrZero(err error) uint32 {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}
