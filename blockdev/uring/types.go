package uring

import "errors"

// The types and constants below mirror include/uapi/linux/io_uring.h; they
// build on every platform so callers do too (off Linux, New fails with
// ErrUnsupported).

// Opcodes.
const (
	OpNop        uint8 = 0
	OpReadFixed  uint8 = 4
	OpWriteFixed uint8 = 5
	OpRead       uint8 = 22
	OpWrite      uint8 = 23
)

// RWFDSync is the rw_flags bit that makes a write durable (RWF_DSYNC).
const RWFDSync = 0x2

// Errors.
var (
	// ErrUnsupported: the kernel (or a seccomp filter) refuses io_uring.
	ErrUnsupported = errors.New("uring: io_uring unavailable")
	// ErrFull: no free submission entry; reap completions first.
	ErrFull = errors.New("uring: submission queue full")
)

// SQE is a submission queue entry (struct io_uring_sqe, 64 bytes).
type SQE struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	FD          int32
	Off         uint64
	Addr        uint64
	Len         uint32
	RWFlags     uint32
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFDIn  int32
	_           [2]uint64
}

// CQE is a completion queue entry (struct io_uring_cqe, 16 bytes). Res is
// the result: bytes moved, or a negated errno.
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}
