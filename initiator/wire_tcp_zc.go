package initiator

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
)

// Zero-copy capsule sends over NVMe/TCP (internal/tcpzc,
// docs/tcp-zero-copy.md).
//
// A batch of capsules whose in-capsule data adds up to at least
// Options.ZeroCopySendMin goes out with io_uring's zero-copy sendmsg
// instead of writev: the kernel sends from the callers' buffers, so it
// neither copies the data into the socket's pages nor allocates (and,
// with init_on_alloc, zeroes) those pages. A replica leg's writes are
// such batches.
//
// Buffer lifetime: the kernel may send from those pages until TCP has
// acknowledged them. A command's buffers (the caller's data, the slot's
// header and digest) are reused only after its response, and a target
// answers a command only after it read the whole capsule: the segment
// carrying the response acknowledges the capsule's bytes, and the kernel
// takes in the acknowledgement before the response's bytes reach the
// reader. So nothing is held past the response; the notices only bound
// the sender's ring. Data that is still unacknowledged when the
// connection goes down belongs to commands that failed: disconnect then
// resets the connection (SO_LINGER 0), so that bytes of a buffer the
// caller has reused never reach the target late. H2CData (after an R2T)
// is written by the reader and copies.
//
// Off by default for a session (Options.ZeroCopySendMin 0); rdmablkd's
// replica legs use it from 4 KiB (cluster.replication.tcp_zero_copy_send_min).
// docs/tcp-zero-copy.md ("The host side") has the lab's runs.

// tcpZeroCopy counts the process's zero-copy capsule sends.
var tcpZeroCopy tcpzc.Counters

// TCPZeroCopy are the process's zero-copy sends of NVMe/TCP capsules.
type TCPZeroCopy struct {
	Sends, Bytes uint64 // sends that went out zero-copy, their bytes
	// Copied: notices in which the kernel said it copied after all
	// (Linux ≥ 6.2 reports it).
	Copied uint64
	// Full: sends of a zero-copy batch that copied instead, because the
	// connection had as many notices outstanding as its ring holds.
	Full uint64
	// Overdue: sends whose completion the kernel did not post inline
	// within tcpzc's bound; their connections failed the write (EIO)
	// and reconnected.
	Overdue uint64
}

// TCPZeroCopyStats returns the process's zero-copy capsule sends so far.
func TCPZeroCopyStats() TCPZeroCopy {
	return TCPZeroCopy{Sends: tcpZeroCopy.Sends.Load(), Bytes: tcpZeroCopy.Bytes.Load(),
		Copied: tcpZeroCopy.Copied.Load(), Full: tcpZeroCopy.Full.Load(), Overdue: tcpZeroCopy.Overdue.Load()}
}

// tcpZC is a tcpWire's zero-copy state; the writer (under writeMu) uses
// it.
type tcpZC struct {
	min   int             // in-capsule bytes a batch needs; ≤ 0: never
	rc    syscall.RawConn // nil: no raw access, never
	tried bool            // the sender was asked for (made or not)
	// s is made by the writer at the first zero-copy batch and read by
	// the connection's end (any goroutine).
	s    atomic.Pointer[tcpzc.Sender]
	data int // in-capsule bytes of the pending batch

	// The write under way (send, run by rc.Write).
	iov  []syscall.Iovec
	rest []syscall.Iovec
	rec  uint32
	on   bool // zero-copy (false: the rest goes by writev)
	err  error
	fn   func(fd uintptr) bool
}

// init prepares zero-copy sends on conn for batches of at least min
// bytes of in-capsule data (≤ 0: never), never to a loopback peer.
func (z *tcpZC) init(conn net.Conn, min, iovs int) {
	if min <= 0 || tcpzc.LocalPeer(conn) {
		return
	}
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	z.min, z.rc = min, rc
	z.iov = make([]syscall.Iovec, 0, iovs)
	z.fn = z.send
}

// use reports whether the pending batch goes out zero-copy, making the
// sender at the first such batch.
func (z *tcpZC) use() bool {
	if z.rc == nil || z.data < z.min {
		return false
	}
	s := z.s.Load()
	if s == nil {
		if z.tried {
			return false
		}
		z.tried = true
		if s, _ = tcpzc.NewHost(&tcpZeroCopy); s == nil {
			return false
		}
		z.s.Store(s)
	}
	return !s.Unusable() && !s.Copies()
}

// write sends bufs, zero-copy as far as the kernel lets it (the rest by
// writev), blocking until all of it is out.
func (z *tcpZC) write(bufs [][]byte) error {
	z.iov = z.iov[:0]
	for _, b := range bufs {
		if len(b) > 0 {
			v := syscall.Iovec{Base: unsafe.SliceData(b)}
			v.SetLen(len(b))
			z.iov = append(z.iov, v)
		}
	}
	z.rest, z.rec, z.on, z.err = z.iov, 0, true, nil
	err := z.rc.Write(z.fn)
	if z.rec != 0 {
		z.s.Load().Seal(z.rec, nil, nil)
	}
	clear(z.iov) // no pointers into the callers' buffers stay behind
	z.rest = nil
	if err != nil {
		return err
	}
	return z.err
}

// send is run by rc.Write with the socket's descriptor until it returns
// true; false waits until the socket is writable.
func (z *tcpZC) send(fd uintptr) bool {
	for len(z.rest) > 0 {
		var n int
		var e syscall.Errno
		if z.on {
			if n, e = z.s.Load().Send(fd, z.rest, &z.rec); e == tcpzc.ErrOff {
				z.on = false
				continue
			}
		} else {
			n, e = nbsys.Writev(fd, z.rest)
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false
		case e != 0:
			z.err = e
			return true
		case n == 0:
			z.err = io.ErrShortWrite
			return true
		}
		z.rest = nbsys.Advance(z.rest, n)
	}
	return true
}

// abort prepares the connection's end once it has sent zero-copy: the
// socket will be reset instead of sending what it still holds (see
// above). Before the socket closes; any goroutine.
func (z *tcpZC) abort(conn net.Conn) {
	if z.s.Load() == nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

// close lets the sender go once the socket is closed and the writer is
// done.
func (z *tcpZC) close() {
	if s := z.s.Load(); s != nil {
		s.Close(tcpzc.CloseWait) // a reset connection drops its sends at once
	}
}
