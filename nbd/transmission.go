package nbd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// request is one transmission-phase request being executed.
type request struct {
	flags  uint16
	typ    uint16
	cookie uint64
	off    uint64
	length uint32
	data   *[]byte // payload (WRITE) or read buffer (READ), pooled
	hdr    [replyHdrSize]byte
}

var requestPool = sync.Pool{New: func() any { return new(request) }}

// conn is the transmission state of one connection.
type conn struct {
	s   *Server
	c   net.Conn
	e   *Export
	sem chan struct{}
	wg  sync.WaitGroup

	wmu  sync.Mutex // serialises replies on c
	werr error      // first write error; guarded by wmu
}

// transmit reads requests from c until NBD_CMD_DISC, a read error or a
// protocol violation, executing each on its own goroutine, and returns
// after every started request has replied.
func (s *Server) transmit(c net.Conn, e *Export) {
	cs := &conn{s: s, c: c, e: e, sem: make(chan struct{}, s.maxIn)}
	defer cs.wg.Wait()
	var hdr [requestSize]byte
	for {
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.log.Debug("nbd read request", "err", err)
			}
			return
		}
		if m := binary.BigEndian.Uint32(hdr[0:]); m != magicRequest {
			s.log.Warn("nbd: bad request magic; closing connection", "magic", fmt.Sprintf("%#x", m))
			return
		}
		r := requestPool.Get().(*request)
		*r = request{
			flags:  binary.BigEndian.Uint16(hdr[4:]),
			typ:    binary.BigEndian.Uint16(hdr[6:]),
			cookie: binary.BigEndian.Uint64(hdr[8:]),
			off:    binary.BigEndian.Uint64(hdr[16:]),
			length: binary.BigEndian.Uint32(hdr[24:]),
		}
		switch r.typ {
		case cmdDisc:
			requestPool.Put(r)
			return
		case cmdWrite:
			if r.length > MaxRequest {
				// The payload cannot be skipped safely at this size:
				// the protocol lets the server hang up.
				s.log.Warn("nbd: write larger than the advertised maximum; closing connection", "len", r.length)
				requestPool.Put(r)
				return
			}
			r.data = getBuf(int(r.length))
			if _, err := io.ReadFull(c, *r.data); err != nil {
				putBuf(r.data)
				requestPool.Put(r)
				return
			}
		case cmdRead:
			if r.length <= MaxRequest {
				r.data = getBuf(int(r.length))
			}
		}
		cs.sem <- struct{}{}
		cs.wg.Add(1)
		s.inFlight.Add(1)
		s.requests.Add(1)
		go cs.run(r)
	}
}

// run executes r, replies and recycles it.
func (cs *conn) run(r *request) {
	defer func() {
		if r.data != nil {
			putBuf(r.data)
		}
		requestPool.Put(r)
		<-cs.sem
		cs.wg.Done()
	}()
	errno := cs.e.execute(r)
	cs.s.inFlight.Add(-1)
	if errno != 0 {
		cs.s.errors.Add(1)
	}
	binary.BigEndian.PutUint32(r.hdr[0:], magicSimpleRepl)
	binary.BigEndian.PutUint32(r.hdr[4:], errno)
	binary.BigEndian.PutUint64(r.hdr[8:], r.cookie)
	bufs := net.Buffers{r.hdr[:]}
	if r.typ == cmdRead && errno == 0 {
		bufs = append(bufs, *r.data)
	}
	cs.wmu.Lock()
	defer cs.wmu.Unlock()
	if cs.werr != nil {
		return
	}
	if _, err := bufs.WriteTo(cs.c); err != nil {
		cs.werr = err
		cs.c.Close() // the reader stops too
	}
}

// execute runs one request against the export and returns the reply's
// errno (0: success).
func (e *Export) execute(r *request) uint32 {
	size := uint64(e.Backend.Size())
	end := r.off + uint64(r.length)
	inRange := end >= r.off && end <= size
	write := r.typ == cmdWrite || r.typ == cmdTrim || r.typ == cmdWriteZeroes
	if write && e.ReadOnly {
		return errPerm
	}
	switch r.typ {
	case cmdRead:
		if r.data == nil {
			return errOverflow
		}
		if !inRange {
			return errInval
		}
		return errnoOrZero(e.readAt(*r.data, int64(r.off)))
	case cmdWrite:
		if !inRange {
			return errNoSpc
		}
		return errnoOrZero(e.writeAt(*r.data, int64(r.off), r.flags&cmdFlagFUA != 0))
	case cmdFlush:
		return errnoOrZero(e.flush())
	case cmdTrim:
		if !inRange {
			return errInval
		}
		return errnoOrZero(e.trim(int64(r.off), int64(r.length), r.flags&cmdFlagFUA != 0))
	case cmdWriteZeroes:
		if !inRange {
			return errNoSpc
		}
		return errnoOrZero(e.zero(int64(r.off), int64(r.length), r.flags&cmdFlagFUA != 0))
	}
	return errInval // CACHE (not advertised), BLOCK_STATUS, unknown
}

func errnoOrZero(err error) uint32 {
	if err == nil {
		return 0
	}
	return errnoOf(err)
}
