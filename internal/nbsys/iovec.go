package nbsys

import (
	"syscall"
	"unsafe"
)

// Advance consumes n written bytes from the front of iov and returns what
// is left to write: whole iovecs dropped, the first partly written one
// moved on (in place).
func Advance(iov []syscall.Iovec, n int) []syscall.Iovec {
	for n > 0 && len(iov) > 0 {
		v := &iov[0]
		if l := int(v.Len); n >= l {
			n -= l
			iov = iov[1:]
			continue
		}
		v.Base = (*byte)(unsafe.Add(unsafe.Pointer(v.Base), n))
		v.SetLen(int(v.Len) - n)
		n = 0
	}
	return iov
}
