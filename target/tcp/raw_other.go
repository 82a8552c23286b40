//go:build !linux

package tcp

import "syscall"

// rawOK: no raw socket access here: every write goes to the writer
// goroutine and every read blocks.
const rawOK = false

// iovec stands in for struct iovec (never passed to a system call here).
type iovec struct {
	Base *byte
	Len  uint64
}

func (v *iovec) SetLen(n int) { v.Len = uint64(n) }

func rawWritev(fd uintptr, iov []iovec) (int, syscall.Errno) { return 0, syscall.ENOSYS }

func rawRead(fd uintptr, p []byte) (int, error) { return 0, syscall.ENOSYS }
