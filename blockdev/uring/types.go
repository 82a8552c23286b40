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
	// OpSendMsgZC is IORING_OP_SENDMSG_ZC (Linux 6.1): sendmsg(2) of the
	// struct msghdr at Addr without copying the data. The kernel pins the
	// pages and posts two completions with the same user data: the send's
	// (bytes sent, with CQEMore set when a notice follows) and, once the
	// network stack no longer references the pages, a notice (CQENotif).
	// Until the notice the memory must stay allocated and unchanged.
	OpSendMsgZC uint8 = 48
)

// CQE flags.
const (
	// CQEMore: another completion with this user data follows (for a
	// zero-copy send: its notice).
	CQEMore = 1 << 1
	// CQENotif marks a zero-copy send's notice.
	CQENotif = 1 << 3
)

// Zero-copy send flags (SQE.IOPrio) and the notice's report.
const (
	// SendZCReportUsage (Linux 6.2) makes the notice say whether the
	// kernel copied the data after all (Res has NotifUsageZCCopied).
	SendZCReportUsage = 1 << 3
	// NotifUsageZCCopied in a notice's Res: the data was copied (a
	// loopback peer, a device without scatter-gather).
	NotifUsageZCCopied = 1 << 31
)

// MsgDontWait is MSG_DONTWAIT for SQE.RWFlags of a send: a socket that
// is full fails the send with EAGAIN instead of making io_uring wait.
const MsgDontWait = 0x40

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
