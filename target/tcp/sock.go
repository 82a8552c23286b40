package tcp

import (
	"errors"
	"io"
	"net"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
)

// sockWriter writes the send path's batches to the socket: one vectored
// write (writev) per batch, without blocking unless asked to. It belongs
// to the holder of the send path's write token.
//
// Where the platform has a raw writev (rawWritev) and the connection
// gives access to its descriptor, a write that would block stops there
// and reports it (the rest stays for the next call); elsewhere a write
// that must not block is not attempted at all and reported as would
// block, so every write goes to the writer goroutine.
type sockWriter struct {
	nc net.Conn
	rc syscall.RawConn // nil: no raw writes

	// Raw path: the write under way, the first iovec not fully written,
	// and the outcome of the last attempt (writev, run by rc.Write).
	iov  []iovec
	i    int
	wait bool
	// waitOut: the socket is in the parked set for room too (parkedOut),
	// while a waiting write parks.
	waitOut bool
	err     error
	fn      func(fd uintptr) bool // s.writev, bound once (no allocation per write)

	// Portable path.
	nb  net.Buffers
	nbs [][]byte

	// calls counts the write system calls that wrote bytes (Stats.Writes).
	calls uint64

	// Zero copy (zc.go, internal/tcpzc): zc, once the connection has its sender;
	// zcOn, this write goes through it; zcRec, the record of this write's
	// zero-copy sends (0: none yet), which endWrite seals.
	zc    *tcpzc.Sender
	zcOn  bool
	zcRec uint32
}

// noRaw (tests) makes new connections use the portable paths, as on a
// platform without raw socket access. Set it before Listen.
var noRaw bool

func (s *sockWriter) init(nc net.Conn, iovs int) {
	s.nc = nc
	if sc, ok := nc.(syscall.Conn); ok && rawOK && !noRaw {
		if rc, err := sc.SyscallConn(); err == nil {
			s.rc = rc
			s.iov = make([]iovec, 0, iovs)
			s.fn = s.writev
			return
		}
	}
	s.nbs = make([][]byte, 0, iovs)
}

// zcAllowed: writes go through the raw path, where zero copy can be
// used.
func (s *sockWriter) zcAllowed() bool { return s.rc != nil }

// write starts writing bufs (nil: goes on with the write under way) and
// reports whether all of it is out. With wait it blocks until it is (or
// the write deadline passes); without, it returns false once the socket
// is full. With zc (raw path, a sender present) a new write's bytes go
// out zero-copy.
func (s *sockWriter) write(bufs [][]byte, wait, zc bool) (bool, error) {
	if s.rc == nil {
		if bufs != nil {
			s.nb = append(s.nbs[:0], bufs...)
		}
		if !wait {
			return false, nil
		}
		_, err := s.nb.WriteTo(s.nc)
		s.calls++
		return err == nil, err
	}
	if bufs != nil {
		s.zcOn = zc && s.zc != nil
		s.iov, s.i = s.iov[:0], 0
		for _, b := range bufs {
			if len(b) > 0 {
				var v iovec
				v.Base = unsafe.SliceData(b)
				v.SetLen(len(b))
				s.iov = append(s.iov, v)
			}
		}
	}
	s.wait, s.err = wait, nil
	err := s.rc.Write(s.fn)
	if s.waitOut {
		_ = s.rc.Control(func(fd uintptr) { s.waitOut = parkedOut(fd, false) })
	}
	if err != nil {
		return false, err
	}
	if s.err != nil {
		return false, s.err
	}
	return s.i == len(s.iov), nil
}

// errZeroWrite: writev wrote nothing without an error.
var errZeroWrite = errors.New("tcp: writev wrote 0 bytes")

// writev is called by rc.Write with the socket's descriptor (non-blocking)
// until it returns true; false makes rc.Write wait until the socket is
// writable (or the deadline passes) and call it again.
func (s *sockWriter) writev(fd uintptr) bool {
	for s.i < len(s.iov) {
		var n int
		var errno syscall.Errno
		if s.zcOn {
			if n, errno = s.zc.Send(fd, s.iov[s.i:], &s.zcRec); errno == tcpzc.ErrOff {
				s.zcOn = false
				continue
			}
		} else {
			n, errno = rawWritev(fd, s.iov[s.i:])
		}
		switch {
		case errno == syscall.EINTR:
		case errno == syscall.EAGAIN:
			if s.wait && !s.waitOut {
				// Parks for room: a spinning reader must not hold that up.
				s.waitOut = parkedOut(fd, true)
			}
			return !s.wait
		case errno == syscall.EPIPE || errno == syscall.ECONNRESET:
			s.err = io.ErrClosedPipe
			return true
		case errno != 0:
			s.err = errno
			return true
		case n == 0:
			s.err = errZeroWrite
			return true
		default:
			s.calls++
			s.advance(n)
		}
	}
	return true
}

// advance consumes n written bytes from the iovecs.
func (s *sockWriter) advance(n int) {
	rest := nbsys.Advance(s.iov[s.i:], n)
	s.i = len(s.iov) - len(rest)
}

// sockReader is the source of the reader's bufio.Reader. While the reader
// is in a batch, a read first takes what the socket already holds,
// without blocking, so that a batch goes on while the host keeps sending
// (up to maxBatch commands or maxBatchBytes); only when the socket is
// empty (or the batch is full) does it end the batch — the core submits
// the I/O it held back, the responses are written — and then block.
// Reader goroutine only.
type sockReader struct {
	c  *conn
	rc syscall.RawConn // nil: no raw reads; a batch ends before every read

	// The read under way (rc.Read runs s.read).
	p   []byte
	n   int
	err error
	fn  func(fd uintptr) bool // r.read, bound once
	sp  spinState             // spin_linux.go
}

func (r *sockReader) init(c *conn) {
	r.c = c
	if sc, ok := c.nc.(syscall.Conn); ok && rawOK && !noRaw {
		if rc, err := sc.SyscallConn(); err == nil {
			r.rc = rc
			r.fn = r.read
			_ = rc.Control(func(fd uintptr) { r.sp.init(c.l.cfg.PollSpins, fd) })
		}
	}
}

// Read implements io.Reader for the bufio.Reader. With raw reads it is
// one rc.Read: read's first attempt takes what the socket holds; on an
// empty socket read ends the batch and rc.Read parks in the poller, which
// watches the descriptor from the start of this rc.Read, so nothing that
// arrives after the empty read is missed — and the socket is read once
// per wake-up, not once to find it empty and again before parking.
func (r *sockReader) Read(p []byte) (int, error) {
	c := r.c
	if r.rc == nil || len(p) == 0 {
		c.endBatch()
		return c.nc.Read(p)
	}
	if c.batching && (c.batchCmds >= maxBatch || c.batchBytes >= maxBatchBytes) {
		c.endBatch()
	}
	r.p, r.n, r.err = p, 0, nil
	err := r.rc.Read(r.fn)
	r.p = nil
	if err != nil {
		return 0, err
	}
	if c.batching {
		c.batchBytes += r.n
	}
	return r.n, r.err
}

// read is one non-blocking read, run by rc.Read. On an empty socket it
// ends the reader's batch (the core submits the I/O it held back, the
// responses are written; nothing here blocks), spins when
// Config.PollSpins allows (spin_linux.go), and asks rc.Read to wait.
func (r *sockReader) read(fd uintptr) bool {
	r.sp.woke()
	for {
		n, err := rawRead(fd, r.p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			r.c.endBatch()
			if r.spin(fd) {
				return true
			}
			r.sp.parked = true
			return false
		}
		r.took(n, err)
		return true
	}
}

// took records what one read returned.
func (r *sockReader) took(n int, err error) {
	switch {
	case err != nil:
		r.err = err
	case n == 0:
		r.err = io.EOF
	default:
		r.n = n
	}
}
