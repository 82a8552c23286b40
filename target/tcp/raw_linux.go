package tcp

import (
	"syscall"

	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// rawOK: this platform has rawWritev and rawRead.
const rawOK = true

// iovec is the kernel's struct iovec.
type iovec = syscall.Iovec

// rawWritev is one writev(2) of iov on the non-blocking descriptor fd,
// made without entering the scheduler (internal/nbsys: the sockets are
// non-blocking, so it cannot sleep).
func rawWritev(fd uintptr, iov []iovec) (int, syscall.Errno) { return nbsys.Writev(fd, iov) }

// rawRead is one read(2) into p on the non-blocking descriptor fd, made
// the same way.
func rawRead(fd uintptr, p []byte) (int, error) {
	n, e := nbsys.Read(fd, p)
	if e != 0 {
		return 0, e
	}
	return n, nil
}
