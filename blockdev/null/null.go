package null

import (
	"fmt"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Backend is a null block device. Create it with New.
type Backend struct {
	blocks    atomic.Uint64
	blockSize int
	closed    atomic.Bool
}

var (
	_ blockdev.Backend     = (*Backend)(nil)
	_ blockdev.NonBlocking = (*Backend)(nil)
	_ blockdev.Resizer     = (*Backend)(nil)
)

// New returns a null device of blocks logical blocks of blockSize bytes.
// blockSize must satisfy blockdev.ValidBlockSize; New panics otherwise
// (configuration is validated before this point, so a bad size here is a
// programming error).
func New(blocks uint64, blockSize int) *Backend {
	if !blockdev.ValidBlockSize(blockSize) {
		panic(fmt.Sprintf("null: invalid block size %d", blockSize))
	}
	b := &Backend{blockSize: blockSize}
	b.blocks.Store(blocks)
	return b
}

// BlockSize returns the logical block size in bytes.
func (b *Backend) BlockSize() int { return b.blockSize }

// Blocks returns the capacity in logical blocks.
func (b *Backend) Blocks() uint64 { return b.blocks.Load() }

// NonBlocking reports true: no method ever waits.
func (b *Backend) NonBlocking() bool { return true }

// check validates an I/O vector at lba and returns its length in blocks.
func (b *Backend) check(bufs [][]byte, lba uint64) error {
	if b.closed.Load() {
		return blockdev.ErrClosed
	}
	total := uint64(0)
	for _, p := range bufs {
		total += uint64(len(p))
	}
	bs := uint64(b.blockSize)
	if total%bs != 0 {
		return blockdev.ErrUnaligned
	}
	if !blockdev.RangeOK(lba, total/bs, b.blocks.Load()) {
		return blockdev.ErrOutOfRange
	}
	return nil
}

// ReadAt clears bufs.
func (b *Backend) ReadAt(bufs [][]byte, lba uint64) error {
	if err := b.check(bufs, lba); err != nil {
		return err
	}
	for _, p := range bufs {
		clear(p)
	}
	return nil
}

// WriteAt checks its arguments and drops the data.
func (b *Backend) WriteAt(bufs [][]byte, lba uint64, _ blockdev.WriteFlags) error {
	return b.check(bufs, lba)
}

// Flush succeeds unless the device is closed.
func (b *Backend) Flush() error {
	if b.closed.Load() {
		return blockdev.ErrClosed
	}
	return nil
}

// WriteZeroes checks the range and does nothing else.
func (b *Backend) WriteZeroes(lba, n uint64) error { return b.checkRange(lba, n) }

// Discard checks the range and does nothing else.
func (b *Backend) Discard(lba, n uint64) error { return b.checkRange(lba, n) }

func (b *Backend) checkRange(lba, n uint64) error {
	if b.closed.Load() {
		return blockdev.ErrClosed
	}
	if !blockdev.RangeOK(lba, n, b.blocks.Load()) {
		return blockdev.ErrOutOfRange
	}
	return nil
}

// Close marks the device closed; every later call returns
// blockdev.ErrClosed, including a second Close.
func (b *Backend) Close() error {
	if b.closed.Swap(true) {
		return blockdev.ErrClosed
	}
	return nil
}

// Resize implements blockdev.Resizer: the device now has blocks blocks.
// It returns blockdev.ErrClosed after Close.
func (b *Backend) Resize(blocks uint64) error {
	if b.closed.Load() {
		return blockdev.ErrClosed
	}
	b.blocks.Store(blocks)
	return nil
}
