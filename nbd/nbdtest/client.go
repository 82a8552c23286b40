package nbdtest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
)

// Protocol values the client uses (doc/proto.md).
const (
	magicInit     = 0x4e42444d41474943
	magicOpt      = 0x49484156454F5054
	magicOptReply = 0x0003e889045565a9
	magicRequest  = 0x25609513
	magicReply    = 0x67446698
	optGo         = 7
	repAck        = 1
	repInfo       = 3
	infoExport    = 0
	infoBlockSize = 3

	cmdRead        = 0
	cmdWrite       = 1
	cmdDisc        = 2
	cmdFlush       = 3
	cmdTrim        = 4
	cmdWriteZeroes = 6
	flagFUA        = 1
)

// ErrClosed: the connection ended before the reply.
var ErrClosed = errors.New("nbdtest: connection closed")

// Error is an error reply.
type Error struct {
	Op    string
	Errno syscall.Errno
}

func (e *Error) Error() string { return fmt.Sprintf("nbdtest: %s: %v", e.Op, e.Errno) }

// Unwrap returns the errno, so errors.Is(err, syscall.EIO) works.
func (e *Error) Unwrap() error { return e.Errno }

// Client is a connected NBD client.
type Client struct {
	c net.Conn
	// Size, Flags and the block size constraints of the export.
	Size                      uint64
	Flags                     uint16
	MinBlock, PrefBlock, MaxB uint32

	wmu sync.Mutex // serialises requests on c

	mu      sync.Mutex // guards pending, next, err
	pending map[uint64]*call
	next    uint64
	err     error
	done    chan struct{}
}

type call struct {
	op  string
	buf []byte // read destination
	ch  chan error
}

// Dial connects to addr on network ("unix" or "tcp") and negotiates
// export name with NBD_OPT_GO.
func Dial(network, addr, name string) (*Client, error) {
	c, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	cl, err := Handshake(c, name)
	if err != nil {
		c.Close()
		return nil, err
	}
	return cl, nil
}

// Handshake negotiates export name on an open connection.
func Handshake(c net.Conn, name string) (*Client, error) {
	var hello [18]byte
	if _, err := io.ReadFull(c, hello[:]); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint64(hello[0:]) != magicInit || binary.BigEndian.Uint64(hello[8:]) != magicOpt {
		return nil, errors.New("nbdtest: not a newstyle NBD server")
	}
	hflags := binary.BigEndian.Uint16(hello[16:])
	cflags := uint32(1) // fixed newstyle
	if hflags&2 != 0 {
		cflags |= 2 // no zeroes
	}
	// GO with a request for the block size.
	data := make([]byte, 4+len(name)+2+2)
	binary.BigEndian.PutUint32(data, uint32(len(name)))
	copy(data[4:], name)
	binary.BigEndian.PutUint16(data[4+len(name):], 1)
	binary.BigEndian.PutUint16(data[6+len(name):], infoBlockSize)
	msg := make([]byte, 4+16+len(data))
	binary.BigEndian.PutUint32(msg, cflags)
	binary.BigEndian.PutUint64(msg[4:], magicOpt)
	binary.BigEndian.PutUint32(msg[12:], optGo)
	binary.BigEndian.PutUint32(msg[16:], uint32(len(data)))
	copy(msg[20:], data)
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	cl := &Client{c: c, pending: map[uint64]*call{}, done: make(chan struct{})}
	gotExport := false
	for {
		var h [20]byte
		if _, err := io.ReadFull(c, h[:]); err != nil {
			return nil, err
		}
		if binary.BigEndian.Uint64(h[0:]) != magicOptReply || binary.BigEndian.Uint32(h[8:]) != optGo {
			return nil, errors.New("nbdtest: bad option reply")
		}
		typ := binary.BigEndian.Uint32(h[12:])
		n := binary.BigEndian.Uint32(h[16:])
		if n > 1<<16 {
			return nil, errors.New("nbdtest: option reply too long")
		}
		d := make([]byte, n)
		if _, err := io.ReadFull(c, d); err != nil {
			return nil, err
		}
		switch {
		case typ == repAck:
			if !gotExport {
				return nil, errors.New("nbdtest: GO acknowledged without export info")
			}
			go cl.readLoop()
			return cl, nil
		case typ == repInfo && len(d) >= 2:
			switch binary.BigEndian.Uint16(d) {
			case infoExport:
				if len(d) != 12 {
					return nil, errors.New("nbdtest: bad NBD_INFO_EXPORT")
				}
				cl.Size = binary.BigEndian.Uint64(d[2:])
				cl.Flags = binary.BigEndian.Uint16(d[10:])
				gotExport = true
			case infoBlockSize:
				if len(d) != 14 {
					return nil, errors.New("nbdtest: bad NBD_INFO_BLOCK_SIZE")
				}
				cl.MinBlock = binary.BigEndian.Uint32(d[2:])
				cl.PrefBlock = binary.BigEndian.Uint32(d[6:])
				cl.MaxB = binary.BigEndian.Uint32(d[10:])
			}
		case typ&(1<<31) != 0:
			return nil, fmt.Errorf("nbdtest: GO refused: reply type %#x %q", typ, d)
		}
	}
}

// readLoop dispatches replies to their callers.
func (cl *Client) readLoop() {
	var err error
	defer func() {
		cl.mu.Lock()
		if err == nil {
			err = ErrClosed
		} else if !errors.Is(err, ErrClosed) {
			err = fmt.Errorf("%w: %w", ErrClosed, err)
		}
		cl.err = err
		for k, p := range cl.pending {
			p.ch <- err
			delete(cl.pending, k)
		}
		cl.mu.Unlock()
		close(cl.done)
	}()
	var h [16]byte
	for {
		if _, err = io.ReadFull(cl.c, h[:]); err != nil {
			return
		}
		if binary.BigEndian.Uint32(h[0:]) != magicReply {
			err = errors.New("nbdtest: bad reply magic")
			return
		}
		errno := binary.BigEndian.Uint32(h[4:])
		cookie := binary.BigEndian.Uint64(h[8:])
		cl.mu.Lock()
		p := cl.pending[cookie]
		delete(cl.pending, cookie)
		cl.mu.Unlock()
		if p == nil {
			err = fmt.Errorf("nbdtest: reply for unknown cookie %d", cookie)
			return
		}
		if errno != 0 {
			p.ch <- &Error{Op: p.op, Errno: syscall.Errno(errno)}
			continue
		}
		if p.buf != nil {
			if _, err = io.ReadFull(cl.c, p.buf); err != nil {
				p.ch <- err
				return
			}
		}
		p.ch <- nil
	}
}

// do sends one request and waits for its reply.
func (cl *Client) do(op string, typ, flags uint16, off uint64, length uint32, payload, readBuf []byte) error {
	p := &call{op: op, buf: readBuf, ch: make(chan error, 1)}
	cl.mu.Lock()
	if cl.err != nil {
		cl.mu.Unlock()
		return cl.err
	}
	cl.next++
	cookie := cl.next
	cl.pending[cookie] = p
	cl.mu.Unlock()
	var h [28]byte
	binary.BigEndian.PutUint32(h[0:], magicRequest)
	binary.BigEndian.PutUint16(h[4:], flags)
	binary.BigEndian.PutUint16(h[6:], typ)
	binary.BigEndian.PutUint64(h[8:], cookie)
	binary.BigEndian.PutUint64(h[16:], off)
	binary.BigEndian.PutUint32(h[24:], length)
	bufs := net.Buffers{h[:]}
	if payload != nil {
		bufs = append(bufs, payload)
	}
	cl.wmu.Lock()
	_, err := bufs.WriteTo(cl.c)
	cl.wmu.Unlock()
	if err != nil {
		cl.c.Close()
	}
	return <-p.ch
}

// ReadAt reads len(p) bytes at off.
func (cl *Client) ReadAt(p []byte, off int64) (int, error) {
	if err := cl.do("read", cmdRead, 0, uint64(off), uint32(len(p)), nil, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteAt writes p at off.
func (cl *Client) WriteAt(p []byte, off int64) (int, error) {
	if err := cl.do("write", cmdWrite, 0, uint64(off), uint32(len(p)), p, nil); err != nil {
		return 0, err
	}
	return len(p), nil
}

// WriteFUA writes p at off with NBD_CMD_FLAG_FUA.
func (cl *Client) WriteFUA(p []byte, off int64) error {
	return cl.do("write fua", cmdWrite, flagFUA, uint64(off), uint32(len(p)), p, nil)
}

// Flush sends NBD_CMD_FLUSH.
func (cl *Client) Flush() error { return cl.do("flush", cmdFlush, 0, 0, 0, nil, nil) }

// Trim sends NBD_CMD_TRIM.
func (cl *Client) Trim(off, n int64) error {
	return cl.do("trim", cmdTrim, 0, uint64(off), uint32(n), nil, nil)
}

// WriteZeroes sends NBD_CMD_WRITE_ZEROES.
func (cl *Client) WriteZeroes(off, n int64) error {
	return cl.do("write zeroes", cmdWriteZeroes, 0, uint64(off), uint32(n), nil, nil)
}

// Raw sends an arbitrary request (for protocol tests).
func (cl *Client) Raw(typ, flags uint16, off uint64, length uint32) error {
	return cl.do(fmt.Sprintf("cmd %d", typ), typ, flags, off, length, nil, nil)
}

// Close sends NBD_CMD_DISC and closes the connection after the server
// hangs up (or at once if it already did).
func (cl *Client) Close() error {
	var h [28]byte
	binary.BigEndian.PutUint32(h[0:], magicRequest)
	binary.BigEndian.PutUint16(h[6:], cmdDisc)
	cl.wmu.Lock()
	_, _ = cl.c.Write(h[:])
	cl.wmu.Unlock()
	<-cl.done
	return cl.c.Close()
}
