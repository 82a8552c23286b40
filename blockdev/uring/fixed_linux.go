package uring

import (
	"fmt"
	"syscall"
	"unsafe"
)

// io_uring_register opcodes and flags for the resource (fixed buffer)
// table (include/uapi/linux/io_uring.h).
const (
	registerBuffers2      = 15
	registerBuffersUpdate = 16

	rsrcRegisterSparse = 1 << 0
)

// MaxFixedBuffer is the largest buffer the kernel accepts in one fixed
// buffer table entry (1 GiB).
const MaxFixedBuffer = 1 << 30

// rsrcRegister is struct io_uring_rsrc_register.
type rsrcRegister struct {
	nr    uint32
	flags uint32
	resv2 uint64
	data  uint64
	tags  uint64
}

// rsrcUpdate2 is struct io_uring_rsrc_update2.
type rsrcUpdate2 struct {
	offset uint32
	resv   uint32
	data   uint64
	tags   uint64
	nr     uint32
	resv2  uint32
}

// RegisterSparse creates an empty fixed buffer table of n entries
// (IORING_REGISTER_BUFFERS2 with IORING_RSRC_REGISTER_SPARSE, Linux 5.19+).
// Entries are then installed and removed one at a time with UpdateBuffer,
// while I/O is in flight. A ring has at most one table: it fails if
// RegisterBuffers or RegisterSparse succeeded before.
func (r *Ring) RegisterSparse(n int) error {
	rr := rsrcRegister{nr: uint32(n), flags: rsrcRegisterSparse}
	_, _, e := syscall.Syscall6(sysRegister, uintptr(r.fd), registerBuffers2, uintptr(unsafe.Pointer(&rr)), unsafe.Sizeof(rr), 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: register sparse buffer table: %w", e)
	}
	return nil
}

// UpdateBuffer installs buf at index i of the table RegisterSparse made
// (replacing what was there), or, with a nil or empty buf, empties the
// entry. buf must not exceed MaxFixedBuffer. The kernel pins buf's pages
// (accounted against RLIMIT_MEMLOCK without CAP_IPC_LOCK: ENOMEM when
// over it); they stay pinned until the entry is replaced or emptied and
// every I/O that named it has completed, so the memory must stay mapped
// until then. Typical errors: ENOMEM, EPERM, EFAULT (bad memory), EINVAL
// (index out of the table), ENXIO (no table).
func (r *Ring) UpdateBuffer(i int, buf []byte) error {
	var iov syscall.Iovec
	if len(buf) > 0 {
		iov.Base = unsafe.SliceData(buf)
		iov.SetLen(len(buf))
	}
	up := rsrcUpdate2{offset: uint32(i), data: uint64(uintptr(unsafe.Pointer(&iov))), nr: 1}
	_, _, e := syscall.Syscall6(sysRegister, uintptr(r.fd), registerBuffersUpdate, uintptr(unsafe.Pointer(&up)), unsafe.Sizeof(up), 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: update fixed buffer %d: %w", i, e)
	}
	return nil
}
