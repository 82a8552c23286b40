package uring

import "unsafe"

// Additions for big-SQE rings and passthrough commands (IORING_OP_URING_CMD,
// Linux ≥ 5.19), used by drivers that take their commands through io_uring
// (ublk's /dev/ublk-control and /dev/ublkcN). They mirror
// include/uapi/linux/io_uring.h and build on every platform.

// OpURingCmd is IORING_OP_URING_CMD: a command for the file's driver; the
// driver-defined command word goes in cmd_op (SQE128.SetCmdOp) and its
// payload in the SQE's command area (SQE128.Cmd).
const OpURingCmd uint8 = 46

// Setup flags (io_uring_params.flags) for NewSQE128 and NewFlags.
const (
	// SetupSQE128 is IORING_SETUP_SQE128: 128-byte SQEs, whose command area
	// holds 80 bytes instead of 16. NewSQE128 always sets it.
	SetupSQE128 uint32 = 1 << 10
	// SetupCoopTaskrun is IORING_SETUP_COOP_TASKRUN: the kernel does not
	// interrupt the submitting task to run completion work; it runs when
	// the task next enters the kernel (5.19+).
	SetupCoopTaskrun uint32 = 1 << 8
	// SetupSingleIssuer is IORING_SETUP_SINGLE_ISSUER (6.0+): only the task
	// that created the ring submits to it.
	SetupSingleIssuer uint32 = 1 << 12
)

// CmdSize is the size of the command area of a 128-byte SQE.
const CmdSize = 80

// SQE128 is a submission entry of a ring set up with IORING_SETUP_SQE128
// (struct io_uring_sqe followed by its 64-byte extension). The first 48
// bytes are those of SQE; from offset 48 on, the 80-byte command area of
// IORING_OP_URING_CMD (union with addr3 for other opcodes).
type SQE128 struct {
	Opcode      uint8
	Flags       uint8
	IOPrio      uint16
	FD          int32
	Off         uint64 // for OpURingCmd: cmd_op (low 32 bits), see SetCmdOp
	Addr        uint64
	Len         uint32
	RWFlags     uint32 // uring_cmd_flags for OpURingCmd
	UserData    uint64
	BufIndex    uint16
	Personality uint16
	SpliceFDIn  int32
	Cmd         [CmdSize]byte
}

// SetCmdOp stores the driver command word in the cmd_op field (the first
// four bytes of the off union, followed by four bytes of padding, which
// it zeroes).
func (e *SQE128) SetCmdOp(op uint32) {
	p := unsafe.Pointer(&e.Off)
	*(*uint32)(p) = op
	*(*uint32)(unsafe.Add(p, 4)) = 0
}

// CmdOp returns the cmd_op field.
func (e *SQE128) CmdOp() uint32 { return *(*uint32)(unsafe.Pointer(&e.Off)) }
