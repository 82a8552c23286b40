package nbd

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// sockConn is a connected stream socket the server drives by descriptor,
// outside Go's netpoller: its connection goroutine reads it and waits for
// it in its own poll(2) set (loop_linux.go), so a request's arrival costs
// no netpoller wake-up and no goroutine hand-off. It is a net.Conn so the
// server tracks and closes it like any other; Read and Write block with
// poll(2) for the paths that do not use the loop.
//
// The descriptor's lifetime: transmit holds it (hold) from its start to
// its end, after every reply was written (done). Close shuts the socket
// down at once — the loop's poll wakes, the reads see end of file, the
// writes EPIPE — and closes the descriptor only when nobody holds it;
// otherwise done does. So no goroutine ever uses the number after close,
// when it could name another file.
type sockConn struct {
	fd int

	// mu guards held and closed. The descriptor is closed exactly once:
	// by Close when nobody holds it (then hold fails from then on), else
	// by done.
	mu     sync.Mutex
	held   bool
	closed bool // Close was called

	iov []syscall.Iovec // writeBuffers' vector; writers are serialised (conn.wmu)
}

// newSockConn takes ownership of fd (a connected stream socket) and makes
// it non-blocking.
func newSockConn(fd int) (*sockConn, error) {
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &sockConn{fd: fd}, nil
}

// hold reserves the descriptor until done; false when Close came first.
func (c *sockConn) hold() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.held = true
	return true
}

// done ends hold; the descriptor is closed if Close was called.
func (c *sockConn) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	if c.closed {
		unix.Close(c.fd)
	}
}

// Close shuts the socket down and closes the descriptor unless transmit
// holds it (then done closes it). Idempotent.
func (c *sockConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	_ = unix.Shutdown(c.fd, unix.SHUT_RDWR)
	if !c.held {
		return unix.Close(c.fd)
	}
	return nil
}

// errAgain: a non-blocking read found nothing to read.
var errAgain = errors.New("nbd: socket would block")

// readOnce is one non-blocking read (nbsys: the descriptor is
// non-blocking, so the call cannot sleep and needs no scheduler hand-off):
// (n, nil), (0, io.EOF), (0, errAgain) or (0, the error).
func (c *sockConn) readOnce(p []byte) (int, error) {
	for {
		n, e := nbsys.Read(uintptr(c.fd), p)
		switch e {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, errAgain
		case syscall.ECONNRESET:
			return 0, io.EOF
		}
		return 0, e
	}
}

// Read implements net.Conn, blocking in poll(2).
func (c *sockConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := c.readOnce(p)
		if err != errAgain {
			return n, err
		}
		if err := c.await(unix.POLLIN); err != nil {
			return 0, err
		}
	}
}

// await blocks until the socket is ready for events (or hung up).
func (c *sockConn) await(events int16) error {
	pfd := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
	for {
		_, err := unix.Poll(pfd, -1)
		if err == unix.EINTR {
			continue
		}
		return err
	}
}

// Write implements net.Conn: all of p, blocking in poll(2) while the
// socket's send buffer is full.
func (c *sockConn) Write(p []byte) (int, error) {
	b := [][]byte{p}
	n, err := c.writeBuffers(b)
	return int(n), err
}

// writeBuffers writes every byte of bufs with writev(2) (nbsys, as
// readOnce), resuming after short writes (it reslices the elements of
// bufs as it goes) and blocking in poll(2) while the send buffer is full.
// Writers must be serialised (the connection's reply writer).
func (c *sockConn) writeBuffers(bufs [][]byte) (int64, error) {
	var total int64
	for len(bufs) > 0 {
		iov := c.iov[:0]
		for _, b := range bufs {
			if len(iov) == nbsys.MaxIOV {
				break
			}
			if len(b) > 0 {
				v := syscall.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				iov = append(iov, v)
			}
		}
		c.iov = iov
		if len(iov) == 0 {
			return total, nil
		}
		n, e := nbsys.Writev(uintptr(c.fd), iov)
		switch e {
		case 0:
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if err := c.await(unix.POLLOUT); err != nil {
				return total, err
			}
			continue
		default:
			return total, e
		}
		total += int64(n)
		for n > 0 {
			if n < len(bufs[0]) {
				bufs[0] = bufs[0][n:]
				break
			}
			n -= len(bufs[0])
			bufs = bufs[1:]
		}
		for len(bufs) > 0 && len(bufs[0]) == 0 {
			bufs = bufs[1:]
		}
	}
	return total, nil
}

// sockAddr names the local and remote ends: a socket pair has no address.
type sockAddr struct{}

func (sockAddr) Network() string { return "unix" }
func (sockAddr) String() string  { return "socketpair" }

func (c *sockConn) LocalAddr() net.Addr              { return sockAddr{} }
func (c *sockConn) RemoteAddr() net.Addr             { return sockAddr{} }
func (c *sockConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *sockConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *sockConn) SetWriteDeadline(time.Time) error { return errNoDeadline }

var errNoDeadline = errors.New("nbd: deadlines are not supported on a socket served by descriptor")
