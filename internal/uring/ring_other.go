//go:build !linux

package uring

import "errors"

// Opcodes (see ring_linux.go); kept so callers build everywhere.
const (
	OpNop        uint8 = 0
	OpReadFixed  uint8 = 4
	OpWriteFixed uint8 = 5
	OpRead       uint8 = 22
	OpWrite      uint8 = 23
	RWFDSync           = 0x2
)

var (
	ErrUnsupported = errors.New("uring: io_uring unavailable")
	ErrFull        = errors.New("uring: submission queue full")
)

// SQE and CQE mirror the Linux layout.
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

type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is unavailable off Linux.
type Ring struct{}

func New(int) (*Ring, error)                 { return nil, ErrUnsupported }
func (*Ring) Entries() int                   { return 0 }
func (*Ring) Prepare(*SQE) error             { return ErrUnsupported }
func (*Ring) Submit() (int, error)           { return 0, ErrUnsupported }
func (*Ring) Wait() error                    { return ErrUnsupported }
func (*Ring) Reap([]CQE) int                 { return 0 }
func (*Ring) RegisterBuffers([][]byte) error { return ErrUnsupported }
func (*Ring) UnregisterBuffers() error       { return ErrUnsupported }
func (*Ring) Close() error                   { return nil }

// MaxFixedBuffer is the largest fixed buffer table entry (1 GiB).
const MaxFixedBuffer = 1 << 30

func (*Ring) RegisterSparse(int) error       { return ErrUnsupported }
func (*Ring) UpdateBuffer(int, []byte) error { return ErrUnsupported }
