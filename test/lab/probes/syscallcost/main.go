// Command syscallcost prints what the basic steps of a userspace target's
// I/O path cost on the machine it runs on, in ns per operation: a bare
// system call, the zero-timeout epoll_pwait and the empty socket read a
// spinning or parking reader makes, a 24-byte writev on a TCP socket, an
// io_uring NOP round trip, runtime.Gosched with nothing else to run, and a
// goroutine hand-off through a channel. In the lab (`SMP=1
// test/lab/run-gobin.sh BIN`) it says how much of a command's time such
// steps can explain under TCG; on the host it gives the native baseline.
// A probe, not a benchmark: single figures, no comparison claimed.
package main

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

func main() {
	n := 20000
	if len(os.Args) > 1 {
		fmt.Sscan(os.Args[1], &n)
	}
	fmt.Printf("GOMAXPROCS %d, %d iterations each\n", runtime.GOMAXPROCS(0), n)
	measure := func(name string, op func()) {
		op()
		t := time.Now()
		for range n {
			op()
		}
		fmt.Printf("%-44s %8.0f ns/op\n", name, float64(time.Since(t).Nanoseconds())/float64(n))
	}

	measure("getppid (raw)", func() { syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		must(err)
		accepted <- c
	}()
	cli, err := net.Dial("tcp", ln.Addr().String())
	must(err)
	srv := <-accepted
	fd := sockFD(srv)

	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	must(err)
	must(unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}))
	evs := make([]unix.EpollEvent, 8)
	measure("epoll_pwait, zero timeout (raw)", func() {
		syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&evs[0])), 8, 0, 0, 0)
	})
	buf := make([]byte, 4096)
	measure("read of an empty TCP socket, EAGAIN (raw)", func() {
		syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	})

	cfd := sockFD(cli)
	drained := make(chan struct{})
	go func() { // the peer reads everything, so the writes never block
		b := make([]byte, 64<<10)
		total := 0
		for total < (n+1)*24 {
			k, err := srv.Read(b)
			must(err)
			total += k
		}
		close(drained)
	}()
	msg := make([]byte, 24)
	iov := []unix.Iovec{{Base: &msg[0]}}
	iov[0].SetLen(len(msg))
	measure("writev of 24 bytes on TCP loopback (raw)", func() {
		syscall.RawSyscall(syscall.SYS_WRITEV, uintptr(cfd), uintptr(unsafe.Pointer(&iov[0])), 1)
	})
	<-drained

	r, err := uring.New(8)
	if err == nil {
		measure("io_uring NOP: prepare, submit, wait", func() {
			must(r.Prepare(&uring.SQE{Opcode: uring.OpNop}))
			_, err := r.Submit()
			must(err)
			must(r.Wait())
			var cq [4]uring.CQE
			r.Reap(cq[:])
		})
	} else {
		fmt.Println("io_uring:", err)
	}

	measure("runtime.Gosched, nothing else runnable", runtime.Gosched)

	ping, pong := make(chan struct{}), make(chan struct{})
	go func() {
		for range ping {
			pong <- struct{}{}
		}
	}()
	measure("goroutine round trip through channels", func() {
		ping <- struct{}{}
		<-pong
	})
}

func sockFD(c net.Conn) int {
	rc, err := c.(*net.TCPConn).SyscallConn()
	must(err)
	var fd int
	must(rc.Control(func(f uintptr) { fd = int(f) }))
	return fd
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "syscallcost:", err)
		os.Exit(1)
	}
}
