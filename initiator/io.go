package initiator

import (
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// IOOp is the operation of an IO.
type IOOp uint8

const (
	// IORead reads Blocks blocks at LBA into Buf.
	IORead IOOp = iota + 1
	// IOWrite writes Blocks blocks from Buf at LBA (FUA honoured).
	IOWrite
	// IOFlush makes completed writes of the namespace durable (LBA,
	// Blocks and Buf are ignored).
	IOFlush
	// IOWriteZeroes zeroes Blocks blocks at LBA (Buf ignored).
	IOWriteZeroes
	// IODeallocate deallocates (trims) Blocks blocks at LBA with one
	// Dataset Management range (Buf ignored).
	IODeallocate
)

func (o IOOp) String() string {
	switch o {
	case IORead:
		return "read"
	case IOWrite:
		return "write"
	case IOFlush:
		return "flush"
	case IOWriteZeroes:
		return "write zeroes"
	case IODeallocate:
		return "deallocate"
	}
	return "invalid op"
}

// MaxBlocksPerIO is the largest Blocks of a read, write or write zeroes
// command (the 16-bit, 0's based NLB field).
const MaxBlocksPerIO = 1 << 16

// IO is one asynchronous command. The caller fills the request fields and
// User, calls IOQueue.Submit, and gets the same pointer back from
// IOQueue.Poll with the result fields set. Between the two the queue owns
// the IO and its Buf (see the package doc).
type IO struct {
	// Request.
	Op     IOOp
	NSID   uint32
	LBA    uint64
	Blocks uint32 // 1-based
	FUA    bool
	// Buf holds the data of reads and writes: Blocks*BlockSize bytes from
	// its start. It must come from the same queue's AllocBuffer.
	Buf *Buffer

	// Result.
	// Status is the NVMe completion status (zero: success).
	Status nvme.Status
	// Err is a transport failure (ErrControllerLost, ErrClosed); then
	// Status is meaningless.
	Err error
	// Latency is the time from Submit to the completion being reaped.
	Latency time.Duration

	// User is free for the caller (a tag); the queue does not touch it.
	User uint64
}

// Result folds Err and Status into one error: nil on success, Err for a
// transport failure, a *StatusError for an NVMe error status. It
// allocates only on failure.
func (io *IO) Result() error {
	if io.Err != nil {
		return io.Err
	}
	return statusErr(io.Op.String(), io.Status)
}
