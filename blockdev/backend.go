package blockdev

import "errors"

// Backend is a block device that a namespace serves.
//
// All offsets and counts are in logical blocks of BlockSize bytes. Buffers
// are owned by the caller and are only used during the call. ReadAt and
// WriteAt take a vector of buffers whose lengths add up to a whole number
// of blocks; the buffers are filled / drained in order.
//
// Methods may be called concurrently from several goroutines. A Backend
// may block in any method; the target runs blocking backends off its
// queue pollers (see NonBlocking).
type Backend interface {
	// BlockSize is the logical block size in bytes (512 or 4096).
	BlockSize() int
	// Blocks is the capacity in logical blocks.
	Blocks() uint64
	// ReadAt fills bufs from the device starting at block lba.
	ReadAt(bufs [][]byte, lba uint64) error
	// WriteAt writes bufs to the device starting at block lba. With
	// WriteFUA the data is durable when WriteAt returns.
	WriteAt(bufs [][]byte, lba uint64, flags WriteFlags) error
	// Flush makes every completed write durable.
	Flush() error
	// WriteZeroes makes blocks [lba, lba+n) read back as zeroes.
	WriteZeroes(lba, n uint64) error
	// Discard tells the device blocks [lba, lba+n) are unused; their
	// content is undefined afterwards (file backends read zeroes).
	Discard(lba, n uint64) error
	// Close flushes and releases the device.
	Close() error
}

// WriteFlags modify WriteAt.
type WriteFlags uint8

const (
	// WriteFUA: force unit access; the write is durable on return.
	WriteFUA WriteFlags = 1 << iota
)

// NonBlocking is implemented by backends whose methods never block on I/O
// (mem, null), so that the target may call them inline on its pollers.
type NonBlocking interface {
	NonBlocking() bool
}

// Errors. Backends wrap them; the target maps them to NVMe status codes.
var (
	// ErrOutOfRange: the range exceeds the device (LBA out of range).
	ErrOutOfRange = errors.New("blockdev: LBA out of range")
	// ErrUnaligned: the buffers of a ReadAt/WriteAt add up to a length that
	// is not a multiple of the block size. (Individual buffers may hold
	// part of a block; only the total must be whole blocks.)
	ErrUnaligned = errors.New("blockdev: buffer not a multiple of the block size")
	// ErrMedium: the device failed the I/O (unrecovered read / write fault).
	ErrMedium = errors.New("blockdev: medium error")
	// ErrClosed: the backend was closed.
	ErrClosed = errors.New("blockdev: closed")
	// ErrReadOnly: write to a read-only backend.
	ErrReadOnly = errors.New("blockdev: read-only")
	// ErrNoSpace: the backing store has no room or quota left for the write
	// (ENOSPC, EDQUOT); the target answers Capacity Exceeded.
	ErrNoSpace = errors.New("blockdev: no space left on the backing store")
	// ErrPathUnavailable: this node cannot serve the I/O now, though the
	// volume may be served elsewhere (a replicated volume whose owner was
	// fenced or whose local copy failed). The target answers Asymmetric
	// Access Inaccessible, a path error: a multipath host retries the
	// command on another path (controller) instead of failing it.
	ErrPathUnavailable = errors.New("blockdev: path unavailable on this node")
)

// Resizer is the optional capability to change a backend's capacity in
// place, keeping its other capabilities (async, fixed buffers) and every
// block below the old size. Growing makes the new blocks read as zeroes.
// Callers serialise Resize with I/O beyond the smaller of the two sizes.
type Resizer interface {
	Resize(blocks uint64) error
}
