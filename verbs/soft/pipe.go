package soft

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// pipeCapacity is the buffer of each direction of an in-process connection.
const pipeCapacity = 256 << 10

// errReset is returned by a pipe that was cut (like ECONNRESET).
var errReset = &net.OpError{Op: "read", Net: "fabric", Err: os.NewSyscallError("read", syscall.ECONNRESET)}

// pipeHalf is one direction of an in-process byte stream: a ring buffer
// with one writer end and one reader end.
type pipeHalf struct {
	mu      sync.Mutex // guards all fields
	canRead sync.Cond  // data, EOF or reset became available
	canWrit sync.Cond  // space became available or the reader left
	buf     []byte
	r, n    int  // read offset and bytes buffered
	wdone   bool // writer closed: EOF after the buffered bytes
	rdone   bool // reader closed: writes fail
	reset   bool // cut: both ends fail at once
}

func newPipeHalf() *pipeHalf {
	p := &pipeHalf{buf: make([]byte, pipeCapacity)}
	p.canRead.L = &p.mu
	p.canWrit.L = &p.mu
	return p
}

func (p *pipeHalf) read(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.n == 0 && !p.wdone && !p.rdone && !p.reset {
		p.canRead.Wait()
	}
	switch {
	case p.reset:
		return 0, errReset
	case p.rdone:
		return 0, net.ErrClosed
	case p.n == 0:
		return 0, io.EOF
	}
	total := 0
	for len(b) > 0 && p.n > 0 {
		end := p.r + p.n
		if end > len(p.buf) {
			end = len(p.buf)
		}
		c := copy(b, p.buf[p.r:end])
		b = b[c:]
		p.r = (p.r + c) % len(p.buf)
		p.n -= c
		total += c
	}
	if p.n == 0 {
		p.r = 0
	}
	p.canWrit.Signal()
	return total, nil
}

func (p *pipeHalf) write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	total := 0
	for len(b) > 0 {
		for p.n == len(p.buf) && !p.rdone && !p.wdone && !p.reset {
			p.canWrit.Wait()
		}
		switch {
		case p.reset:
			return total, errReset
		case p.wdone:
			return total, net.ErrClosed
		case p.rdone:
			return total, &net.OpError{Op: "write", Net: "fabric", Err: os.NewSyscallError("write", syscall.EPIPE)}
		}
		w := (p.r + p.n) % len(p.buf)
		end := len(p.buf)
		if w < p.r {
			end = p.r
		}
		c := copy(p.buf[w:end], b)
		b = b[c:]
		p.n += c
		total += c
		p.canRead.Signal()
	}
	return total, nil
}

func (p *pipeHalf) closeWrite() {
	p.mu.Lock()
	p.wdone = true
	p.mu.Unlock()
	p.canRead.Broadcast()
	p.canWrit.Broadcast()
}

func (p *pipeHalf) closeRead() {
	p.mu.Lock()
	p.rdone = true
	p.mu.Unlock()
	p.canRead.Broadcast()
	p.canWrit.Broadcast()
}

func (p *pipeHalf) cut() {
	p.mu.Lock()
	p.reset = true
	p.mu.Unlock()
	p.canRead.Broadcast()
	p.canWrit.Broadcast()
}

// fabricAddr is a net.Addr on a Fabric.
type fabricAddr string

func (a fabricAddr) Network() string { return "fabric" }
func (a fabricAddr) String() string  { return string(a) }

// memConn is one end of an in-process connection. It implements net.Conn
// without deadlines: the soft provider cancels blocked I/O by closing.
type memConn struct {
	in, out       *pipeHalf
	local, remote fabricAddr
}

// newMemConnPair returns the two ends of a connection.
func newMemConnPair(a, b fabricAddr) (*memConn, *memConn) {
	ab, ba := newPipeHalf(), newPipeHalf()
	return &memConn{in: ba, out: ab, local: a, remote: b}, &memConn{in: ab, out: ba, local: b, remote: a}
}

func (c *memConn) Read(b []byte) (int, error)  { return c.in.read(b) }
func (c *memConn) Write(b []byte) (int, error) { return c.out.write(b) }

// Close ends both directions: the peer reads EOF after the buffered bytes.
func (c *memConn) Close() error {
	c.out.closeWrite()
	c.in.closeRead()
	return nil
}

// CloseWrite half-closes: the peer reads EOF, this end can still read.
func (c *memConn) CloseWrite() error {
	c.out.closeWrite()
	return nil
}

// cut fails both directions at once, buffered bytes included (cable pull).
func (c *memConn) cut() {
	c.in.cut()
	c.out.cut()
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

var errNoDeadline = errors.New("soft: fabric connections have no deadlines")

func (c *memConn) SetDeadline(time.Time) error      { return errNoDeadline }
func (c *memConn) SetReadDeadline(time.Time) error  { return errNoDeadline }
func (c *memConn) SetWriteDeadline(time.Time) error { return errNoDeadline }
