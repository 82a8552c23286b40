//go:build linux

package nbd

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// NBD ioctls (linux/nbd.h: _IO(0xab, n)).
const (
	ioctlSetSock       = 0xab00
	ioctlSetBlkSize    = 0xab01
	ioctlDoIt          = 0xab03
	ioctlClearSock     = 0xab04
	ioctlClearQue      = 0xab05
	ioctlSetSizeBlocks = 0xab07
	ioctlDisconnect    = 0xab08
	ioctlSetTimeout    = 0xab09
	ioctlSetFlags      = 0xab0a
)

// socketBuffer is the send buffer of each end of a kernel attachment's
// socket pair. A unix stream socket's sender may have at most its send
// buffer's worth of skbs unread at the peer; the default (wmem_default,
// 208 KiB) holds about 35 queued 4 KiB writes (each a header skb and a
// data skb), so with the queue depths an attachment runs (128) the
// kernel's nbd request path would sleep in sock_sendmsg waiting for our
// reader, and our reply writes for the kernel's receive worker. 4 MiB
// holds the payloads of a full queue (128) of 32 KiB requests in each
// direction; memory is taken only as far as data is queued.
const socketBuffer = 4 << 20

// sizeSocketBuffers sets both ends' send buffers to socketBuffer:
// SO_SNDBUFFORCE (CAP_NET_ADMIN, which an attachment has: it needs
// CAP_SYS_ADMIN for the nbd ioctls) past net.core.wmem_max, else
// SO_SNDBUF up to it. A refusal only leaves the default.
func sizeSocketBuffers(fds [2]int) {
	for _, fd := range fds {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, socketBuffer) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, socketBuffer)
		}
	}
}

// KernelDevice is an export attached to a kernel /dev/nbdX.
type KernelDevice struct {
	// Path is the device node, e.g. /dev/nbd0.
	Path string

	f       *os.File
	done    chan struct{} // closed when NBD_DO_IT returns
	doErr   error
	serveWG sync.WaitGroup
	once    sync.Once
}

// FreeKernelDevice returns the first /dev/nbdX the kernel has no socket
// on (no /sys/block/nbdX/pid), or ErrNoDevice when the nbd module is not
// loaded or every device is busy.
func FreeKernelDevice() (string, error) {
	names, _ := filepath.Glob("/sys/block/nbd*")
	sort.Slice(names, func(i, j int) bool {
		return len(names[i]) < len(names[j]) || len(names[i]) == len(names[j]) && names[i] < names[j]
	})
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(n, "pid")); err == nil {
			continue
		}
		dev := "/dev/" + filepath.Base(n)
		if _, err := os.Stat(dev); err == nil {
			return dev, nil
		}
	}
	return "", ErrNoDevice
}

// AttachKernel connects export name of s to the kernel device dev (""
// picks a free one) through conns socket pairs (conns < 1: one) and the
// NBD ioctls: block size, size, transmission flags (with
// NBD_FLAG_CAN_MULTI_CONN, which the kernel requires for more than one
// connection), request timeout, NBD_SET_SOCK once per socket, then
// NBD_DO_IT. The kernel spreads its hardware queues' requests over the
// sockets; the server serves the other end of every pair from the
// transmission phase. All ioctls run on one locked OS thread: the kernel
// accepts the sockets of one device only from the task that set up the
// first. timeout ≤ 0 leaves the kernel default. Call Detach to disconnect.
// Needs CAP_SYS_ADMIN and the nbd module; without it the error wraps
// ErrNoDevice.
func (s *Server) AttachKernel(dev, name string, timeout time.Duration, conns int) (*KernelDevice, error) {
	e := s.export(name)
	if e == nil {
		return nil, ErrNoExport
	}
	conns = max(conns, 1)
	if dev == "" {
		var err error
		if dev, err = FreeKernelDevice(); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrNoDevice, err)
		}
		return nil, err
	}
	var kernelEnds []int
	var serverConns []net.Conn
	closeAll := func() {
		for _, fd := range kernelEnds {
			unix.Close(fd)
		}
		for _, c := range serverConns {
			c.Close()
		}
	}
	for range conns {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			closeAll()
			f.Close()
			return nil, fmt.Errorf("nbd: attach %s: socketpair: %w", dev, err)
		}
		kernelEnds = append(kernelEnds, fds[0])
		sizeSocketBuffers(fds)
		// Served by descriptor: a connection whose queue is a Poller
		// runs its poll loop on it (loop_linux.go).
		c, err := newSockConn(fds[1])
		if err != nil {
			closeAll()
			f.Close()
			return nil, fmt.Errorf("nbd: attach %s: %w", dev, err)
		}
		serverConns = append(serverConns, c)
	}
	bs := uint64(e.bs())
	if bs < 512 {
		bs = 512 // the kernel's smallest logical block size
	}
	size := uint64(e.Backend.Size())
	k := &KernelDevice{Path: dev, f: f, done: make(chan struct{})}
	for _, c := range serverConns {
		k.serveWG.Add(1)
		go func(c net.Conn) {
			defer k.serveWG.Done()
			_ = s.ServeTransmission(c, e.Name)
		}(c)
	}
	setup := make(chan error, 1)
	go func() {
		// Setup and NBD_DO_IT on one OS thread (see above). NBD_DO_IT
		// blocks until the device is disconnected; the kernel holds
		// its own references to the sockets.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := configureKernel(f, bs, size, uint16(e.flags()), timeout, kernelEnds)
		setup <- err
		if err == nil {
			// Signals blocked: one taken here would end NBD_DO_IT and
			// shut the device down (sigmask_linux.go).
			k.doErr = withSignalsBlocked(func() error { return ioctl(f, ioctlDoIt, 0) })
		}
		for _, fd := range kernelEnds {
			unix.Close(fd)
		}
		close(k.done)
	}()
	if err := <-setup; err != nil {
		_ = ioctl(f, ioctlClearSock, 0)
		for _, c := range serverConns {
			c.Close()
		}
		k.serveWG.Wait()
		<-k.done
		f.Close()
		return nil, fmt.Errorf("nbd: attach %s: %w", dev, err)
	}
	return k, nil
}

// configureKernel sets the device's geometry, flags and timeout and adds
// every socket. Runs on the locked thread that will call NBD_DO_IT.
func configureKernel(f *os.File, bs, size uint64, flags uint16, timeout time.Duration, socks []int) error {
	if err := ioctl(f, ioctlSetBlkSize, uintptr(bs)); err != nil {
		return fmt.Errorf("NBD_SET_BLKSIZE %d: %w", bs, err)
	}
	if err := ioctl(f, ioctlSetSizeBlocks, uintptr(size/bs)); err != nil {
		return fmt.Errorf("NBD_SET_SIZE_BLOCKS: %w", err)
	}
	if err := ioctl(f, ioctlSetFlags, uintptr(flags)); err != nil {
		return fmt.Errorf("NBD_SET_FLAGS: %w", err)
	}
	if timeout > 0 {
		if err := ioctl(f, ioctlSetTimeout, uintptr(max(1, int(timeout/time.Second)))); err != nil {
			return fmt.Errorf("NBD_SET_TIMEOUT: %w", err)
		}
	}
	for i, fd := range socks {
		if err := ioctl(f, ioctlSetSock, uintptr(fd)); err != nil {
			return fmt.Errorf("NBD_SET_SOCK (connection %d of %d): %w", i+1, len(socks), err)
		}
	}
	return nil
}

// Detach asks the kernel to disconnect (NBD_DISCONNECT), waits up to
// timeout for NBD_DO_IT to return, clears the socket and closes the
// device. The kernel flushes its queue first; I/O still queued when the
// socket closes fails with EIO in the kernel.
func (k *KernelDevice) Detach(timeout time.Duration) error {
	var err error
	k.once.Do(func() {
		_ = ioctl(k.f, ioctlDisconnect, 0)
		select {
		case <-k.done:
		case <-time.After(timeout):
			err = fmt.Errorf("nbd: %s: NBD_DO_IT did not return within %v", k.Path, timeout)
		}
		_ = ioctl(k.f, ioctlClearQue, 0)
		_ = ioctl(k.f, ioctlClearSock, 0)
		k.serveWG.Wait()
		k.f.Close()
	})
	return err
}

// Done is closed when the kernel ended the attachment.
func (k *KernelDevice) Done() <-chan struct{} { return k.done }

func ioctl(f *os.File, req, arg uintptr) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), req, arg)
	if errno != 0 {
		if errno == unix.ENOTTY || errno == unix.ENODEV {
			return fmt.Errorf("%w: %v", ErrNoDevice, errno)
		}
		return errno
	}
	return nil
}
