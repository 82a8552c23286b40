package file

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/rdmablk/rdmablk/blockdev"
)

// zeroChunk bounds the size of one write when zeroes have to be written.
const zeroChunk = 1 << 20

// zeroBuf is a shared, never-written block of zeroes, aligned for the
// direct path. Any number of writes may read it at once.
var zeroBuf = sync.OnceValue(func() []byte { return AlignedBuffer(zeroChunk, 4096) })

// checkRange validates a WriteZeroes/Discard request and returns its byte
// offset and length. The caller holds b.mu for reading.
func (b *Backend) checkRange(lba, n uint64) (off, length int64, err error) {
	if b.closed {
		return 0, 0, blockdev.ErrClosed
	}
	if !blockdev.RangeOK(lba, n, b.blocks.Load()) {
		return 0, 0, blockdev.ErrOutOfRange
	}
	if b.readOnly {
		return 0, 0, blockdev.ErrReadOnly
	}
	return int64(lba << b.shift), int64(n << b.shift), nil
}

// WriteZeroes makes blocks [lba, lba+n) read back as zeroes. It may block,
// for a long time when zeroes have to be written.
func (b *Backend) WriteZeroes(lba, n uint64) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	off, length, err := b.checkRange(lba, n)
	if err != nil || length == 0 {
		return err
	}
	if b.blockDev {
		return b.blkZeroOut(off, length)
	}
	return b.fileZero(off, length)
}

// Discard tells the backend that blocks [lba, lba+n) are unused. On a
// regular file they read back as zeroes afterwards; on a block device
// their content is up to the device. It may block.
func (b *Backend) Discard(lba, n uint64) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	off, length, err := b.checkRange(lba, n)
	if err != nil || length == 0 {
		return err
	}
	if b.blockDev {
		if b.noDiscard.Load() {
			return nil
		}
		switch e := blkRange(b.fd, ioctlBLKDISCARD, uint64(off), uint64(length)); {
		case e == 0:
			return nil
		case refused(e):
			b.noDiscard.Store(true) // a hint the device cannot take
			return nil
		default:
			return b.osErr("BLKDISCARD", off, e)
		}
	}
	if done, err := b.tryFallocate(&b.noPunchHole, fallocPunchHole, "fallocate(PUNCH_HOLE)", off, length); done {
		return err
	}
	return b.fileZero(off, length)
}

// refused reports whether an errno means "this operation is not
// supported here" rather than a failure of this request.
func refused(e syscall.Errno) bool {
	return e == syscall.EOPNOTSUPP || e == syscall.ENOSYS || e == syscall.ENOTTY
}

// tryFallocate runs fallocate(mode|KEEP_SIZE) unless the filesystem
// refused that mode before (unsupported). done is false when the caller
// must fall back: the mode is (now known to be) refused. A refusal is
// remembered in *unsupported so later requests skip the call.
func (b *Backend) tryFallocate(unsupported *atomic.Bool, mode uint32, name string, off, length int64) (done bool, err error) {
	if unsupported.Load() {
		return false, nil
	}
	switch e := fallocate(b.fd, mode|fallocKeepSize, off, length); {
	case e == 0:
		return true, nil
	case refused(e):
		unsupported.Store(true)
		return false, nil
	default:
		return true, b.osErr(name, off, e)
	}
}

// fileZero zeroes a range of a regular file: ZERO_RANGE, else PUNCH_HOLE,
// else written zeroes.
func (b *Backend) fileZero(off, length int64) error {
	if done, err := b.tryFallocate(&b.noZeroRange, fallocZeroRange, "fallocate(ZERO_RANGE)", off, length); done {
		return err
	}
	if done, err := b.tryFallocate(&b.noPunchHole, fallocPunchHole, "fallocate(PUNCH_HOLE)", off, length); done {
		return err
	}
	return b.writeZeroes(off, length)
}

// blkZeroOut zeroes a range of a block device with BLKZEROOUT (which the
// kernel itself carries out as Write Zeroes, or by writing zero pages),
// else by writing zeroes.
func (b *Backend) blkZeroOut(off, length int64) error {
	if !b.noZeroOut.Load() {
		switch e := blkRange(b.fd, ioctlBLKZEROOUT, uint64(off), uint64(length)); {
		case e == 0:
			return nil
		case refused(e):
			b.noZeroOut.Store(true)
		default:
			return b.osErr("BLKZEROOUT", off, e)
		}
	}
	return b.writeZeroes(off, length)
}

// writeZeroes writes zero blocks over [off, off+length) in chunks of at
// most zeroChunk bytes. off and length are whole blocks.
func (b *Backend) writeZeroes(off, length int64) error {
	b.stats.zeroWritten.Add(1)
	z := zeroBuf()
	var vec [1][]byte
	for length > 0 {
		n := min(length, int64(len(z)))
		vec[0] = z[:n]
		if err := b.xfer(vec[:], off, kindWrite); err != nil {
			return err
		}
		off += n
		length -= n
	}
	return nil
}
