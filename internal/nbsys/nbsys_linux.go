package nbsys

import (
	"syscall"
	"unsafe"
)

// MaxIOV is the kernel's IOV_MAX: the most iovecs one Writev passes on.
const MaxIOV = 1024

// Read is one read(2) into p on fd, which must be in non-blocking mode.
// It returns the bytes read (0 at end of file) or the errno (EAGAIN: none
// available now).
func Read(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// Writev is one writev(2) of iov (at most MaxIOV of them) on fd, which
// must be in non-blocking mode. It returns the bytes written or the errno
// (EAGAIN: the descriptor takes nothing now).
func Writev(fd uintptr, iov []syscall.Iovec) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(unsafe.SliceData(iov))), uintptr(min(len(iov), MaxIOV)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// Write is one write(2) of p on fd, which must be in non-blocking mode or
// one a write cannot sleep on (an eventfd adding 1 to a counter that its
// reader keeps far below 2^64-1). It returns the bytes written or the
// errno.
func Write(fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
