package tcp

import (
	"syscall"
	"unsafe"
)

// rawOK: this platform has rawWritev and rawRead.
const rawOK = true

// iovec is the kernel's struct iovec.
type iovec = syscall.Iovec

// maxIOV is the kernel's IOV_MAX: the most iovecs one writev takes.
const maxIOV = 1024

// rawWritev is one writev(2) of iov on the non-blocking descriptor fd.
func rawWritev(fd uintptr, iov []iovec) (int, syscall.Errno) {
	n, _, e := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(unsafe.SliceData(iov))), uintptr(min(len(iov), maxIOV)))
	return int(n), e
}

// rawRead is one read(2) into p on the non-blocking descriptor fd.
func rawRead(fd uintptr, p []byte) (int, error) { return syscall.Read(int(fd), p) }
