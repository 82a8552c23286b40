//go:build !linux

package tcp

import "syscall"

// rawOK: no raw socket access here: every write goes to the writer
// goroutine and every read blocks.
const rawOK = false

func rawWritev(fd uintptr, iov []syscall.Iovec) (int, syscall.Errno) { return 0, syscall.ENOSYS }

func rawRead(fd uintptr, p []byte) (int, error) { return 0, syscall.ENOSYS }
