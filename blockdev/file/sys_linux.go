package file

import (
	"syscall"
	"unsafe"
)

// Constants from include/uapi/linux/{falloc,fs,stat}.h.
const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10

	rwfDSync = 0x02 // RWF_DSYNC for pwritev2

	atEmptyPath   = 0x1000
	statxDIOAlign = 0x2000
)

// iovBatch is how many iovecs one vectored syscall takes; longer vectors
// are issued in several calls. The array lives on the caller's stack.
const iovBatch = 64

// preadv reads into cnt iovecs starting at iov. iov must point into an
// array that stays reachable for the call (the caller's stack array).
func preadv(fd int, iov *syscall.Iovec, cnt int, off int64) (int, syscall.Errno) {
	r, _, e := syscall.Syscall6(syscall.SYS_PREADV, uintptr(fd), uintptr(unsafe.Pointer(iov)),
		uintptr(cnt), uintptr(off), uintptr(uint64(off)>>32), 0)
	return int(r), e
}

// pwritev writes cnt iovecs starting at iov.
func pwritev(fd int, iov *syscall.Iovec, cnt int, off int64) (int, syscall.Errno) {
	r, _, e := syscall.Syscall6(syscall.SYS_PWRITEV, uintptr(fd), uintptr(unsafe.Pointer(iov)),
		uintptr(cnt), uintptr(off), uintptr(uint64(off)>>32), 0)
	return int(r), e
}

// pwritev2Nr is the pwritev2 syscall number, 0 when unknown; tests set it
// to 0 to exercise the fallback for kernels without pwritev2.
var pwritev2Nr uintptr = sysPwritev2

// pwritev2 is pwritev with RWF_* flags; ENOSYS where the architecture's
// number is not known here.
func pwritev2(fd int, iov *syscall.Iovec, cnt int, off int64, flags int) (int, syscall.Errno) {
	if pwritev2Nr == 0 {
		return 0, syscall.ENOSYS
	}
	r, _, e := syscall.Syscall6(pwritev2Nr, uintptr(fd), uintptr(unsafe.Pointer(iov)),
		uintptr(cnt), uintptr(off), uintptr(uint64(off)>>32), uintptr(flags))
	return int(r), e
}

// pread and pwrite are the single-buffer forms, returning the errno.
func pread(fd int, p []byte, off int64) (int, syscall.Errno) {
	n, err := syscall.Pread(fd, p, off)
	return n, toErrno(err)
}

func pwrite(fd int, p []byte, off int64) (int, syscall.Errno) {
	n, err := syscall.Pwrite(fd, p, off)
	return n, toErrno(err)
}

func toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	return syscall.EIO // the syscall package returns only Errno values
}

// fdatasync retries on EINTR.
func fdatasync(fd int) syscall.Errno {
	for {
		e := toErrno(syscall.Fdatasync(fd))
		if e != syscall.EINTR {
			return e
		}
	}
}

// fallocate retries on EINTR.
func fallocate(fd int, mode uint32, off, length int64) syscall.Errno {
	for {
		e := toErrno(syscall.Fallocate(fd, mode, off, length))
		if e != syscall.EINTR {
			return e
		}
	}
}

// ioctlPtr issues an ioctl whose argument points at arg; ENOTTY when the
// request is unknown here (0).
func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) syscall.Errno {
	if req == 0 {
		return syscall.ENOTTY
	}
	for {
		_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		if e != syscall.EINTR {
			return e
		}
	}
}

// blkRange issues BLKDISCARD or BLKZEROOUT for bytes [off, off+length).
func blkRange(fd int, req uintptr, off, length uint64) syscall.Errno {
	r := [2]uint64{off, length}
	return ioctlPtr(fd, req, unsafe.Pointer(&r))
}

// statxDIO returns the direct-I/O memory and offset alignment of fd from
// statx(STATX_DIOALIGN). ok is false when the kernel does not report them
// (older than 6.1, or statx unknown here); both are 0 when the file does
// not support direct I/O.
func statxDIO(fd int) (memAlign, offAlign uint32, ok bool) {
	if sysStatx == 0 {
		return 0, 0, false
	}
	// struct statx is 256 bytes: stx_mask at 0, stx_dio_mem_align at 152,
	// stx_dio_offset_align at 156 (include/uapi/linux/stat.h).
	var buf [256 / 8]uint64
	empty := [1]byte{}
	_, _, e := syscall.Syscall6(sysStatx, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])),
		atEmptyPath, statxDIOAlign, uintptr(unsafe.Pointer(&buf[0])), 0)
	if e != 0 {
		return 0, 0, false
	}
	b := (*[256]byte)(unsafe.Pointer(&buf[0]))
	mask := *(*uint32)(unsafe.Pointer(&b[0]))
	if mask&statxDIOAlign == 0 {
		return 0, 0, false
	}
	return *(*uint32)(unsafe.Pointer(&b[152])), *(*uint32)(unsafe.Pointer(&b[156])), true
}
