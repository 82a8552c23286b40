package tcpzc

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

var works struct {
	once sync.Once
	ok   bool
}

// Works reports whether this kernel sends zero-copy on a plain TCP
// connection (io_uring with IORING_OP_SENDMSG_ZC, Linux 6.1): it probes
// once, on a loopback connection of its own. For tests and diagnostics.
func Works() bool {
	works.once.Do(func() { works.ok = probe() })
	return works.ok
}

// loopbackPair is a loopback TCP connection: a the accepted end (of a
// Multipath TCP listener where mptcp and the kernel has it), d the
// dialed one.
func loopbackPair(mptcp bool) (a, d *net.TCPConn, err error) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(mptcp)
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	dc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	c := <-acc
	if c == nil {
		dc.Close()
		return nil, nil, errors.New("tcpzc: accept failed")
	}
	return c.(*net.TCPConn), dc.(*net.TCPConn), nil
}

func probe() bool {
	a, d, err := loopbackPair(false)
	if err != nil {
		return false
	}
	defer d.Close()
	defer a.Close()
	z, _ := New(func([]uint16) {}, &Counters{})
	if z == nil {
		return false
	}
	defer z.Close(time.Second)
	rc, err := a.SyscallConn()
	if err != nil {
		return false
	}
	p := []byte("probe")
	iov := []syscall.Iovec{{Base: &p[0]}}
	iov[0].SetLen(len(p))
	var n int
	var errno syscall.Errno
	var rec uint32
	if rc.Write(func(fd uintptr) bool { n, errno = z.Send(fd, iov, &rec); return true }) != nil {
		return false
	}
	z.Seal(rec, nil, nil)
	return errno == 0 && n == len(p)
}
