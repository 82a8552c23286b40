package file

import (
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Backend serves a regular file or block device. Create it with Open.
type Backend struct {
	mu     sync.RWMutex // read-held by every call (and every in-flight async I/O) for its duration, write-held by Close and Resize; guards closed and the descriptors' validity
	closed bool

	path     string
	fd       int          // control descriptor (fdatasync, fallocate, ftruncate, ioctl): dfd when direct I/O is on, else the buffered one
	dfd      int          // O_DIRECT descriptor, -1 when direct I/O is off
	flags    int          // open flags without O_DIRECT (for reopening buffered)
	buf      atomic.Int32 // buffered descriptor, -1 until the first misaligned I/O opens it (bufferedFD)
	bufMu    sync.Mutex   // serialises opening buf
	align    uintptr      // direct-I/O alignment of offsets, addresses and lengths (power of two); 0 without dfd
	bs       int
	shift    uint          // log2(bs)
	blocks   atomic.Uint64 // capacity; written by Open and Resize (with mu held for writing)
	readOnly bool
	blockDev bool
	ring     *sharedRing // io_uring fast path, shared with other backends; nil without io_uring or O_DIRECT
	group    *RingGroup  // ring's group
	maxPiece int         // fast path: bytes per io_uring entry at most (a multiple of align); 0: no limit

	// Guarded by ring.mu.
	maxInflight int  // Options.RingEntries: fast-path entries (I/Os or pieces) in flight at most
	inflight    int  // fast-path entries submitted and not yet reaped
	plugs       int  // outstanding Plug calls: Submit* only queue
	detached    bool // closed: off the ring

	fixedHeld map[blockdev.FixedRegion]int // registrations this backend holds (guarded by ring.fixed.mu)

	// What the kernel or filesystem refused, learned at run time so that a
	// refused call is not retried on every request.
	noDSync     atomic.Bool // pwritev2(RWF_DSYNC)
	noZeroRange atomic.Bool // fallocate(ZERO_RANGE)
	noPunchHole atomic.Bool // fallocate(PUNCH_HOLE)
	noZeroOut   atomic.Bool // BLKZEROOUT
	noDiscard   atomic.Bool // BLKDISCARD

	stats struct {
		direct, buffered, directRefused atomic.Uint64
		fuaNative, fuaEmulated          atomic.Uint64
		zeroWritten                     atomic.Uint64
		async                           atomic.Uint64
		fixedIOs, fixedRegions          atomic.Uint64
		pieced                          atomic.Uint64
	}
}

var _ blockdev.Backend = (*Backend)(nil)

// Stats counts how I/O was carried out since Open.
type Stats struct {
	// DirectIOs counts transfers issued on the O_DIRECT descriptor (all
	// buffers, lengths and the offset aligned). A transfer is one
	// ReadAt/WriteAt call, or one chunk of zeroes written by the
	// WriteZeroes/Discard fallback.
	DirectIOs uint64
	// BufferedIOs counts transfers issued through the page cache: direct
	// I/O off, or something misaligned.
	BufferedIOs uint64
	// DirectRefused counts direct I/Os finished buffered because the
	// kernel refused O_DIRECT (EINVAL) or a short transfer left a
	// misaligned remainder. They are also counted in DirectIOs.
	DirectRefused uint64
	// FUANative and FUAEmulated count FUA writes done with
	// pwritev2(RWF_DSYNC) and as write + fdatasync respectively.
	FUANative, FUAEmulated uint64
	// ZeroWrites counts WriteZeroes/Discard calls served by writing zero
	// blocks because the filesystem or device had no cheaper way.
	ZeroWrites uint64
	// AsyncIOs counts transfers completed through the io_uring fast path
	// (SubmitRead/SubmitWrite) in one go; also counted in DirectIOs.
	AsyncIOs uint64
	// FixedIOs counts the AsyncIOs submitted as READ_FIXED / WRITE_FIXED
	// on a buffer registered with RegisterFixed (also in AsyncIOs).
	FixedIOs uint64
	// FixedRegions is the number of RegisterFixed registrations currently
	// held (a gauge, not a counter).
	FixedRegions uint64
	// PiecedIOs counts the I/Os larger than MaxPieceBytes submitted to the
	// fast path as several io_uring entries: those that completed there
	// (also in AsyncIOs) and those a short piece sent to the blocking path.
	PiecedIOs uint64
}

// Stats returns the I/O path counters. Safe to call at any time,
// including after Close.
func (b *Backend) Stats() Stats {
	return Stats{
		DirectIOs:     b.stats.direct.Load(),
		BufferedIOs:   b.stats.buffered.Load(),
		DirectRefused: b.stats.directRefused.Load(),
		FUANative:     b.stats.fuaNative.Load(),
		FUAEmulated:   b.stats.fuaEmulated.Load(),
		ZeroWrites:    b.stats.zeroWritten.Load(),
		AsyncIOs:      b.stats.async.Load(),
		FixedIOs:      b.stats.fixedIOs.Load(),
		FixedRegions:  b.stats.fixedRegions.Load(),
		PiecedIOs:     b.stats.pieced.Load(),
	}
}

// MaxPieceBytes is the largest transfer the io_uring fast path issues as
// one entry (Options.MaxPiece as resolved at Open); 0 means no limit.
func (b *Backend) MaxPieceBytes() int { return b.maxPiece }

// BlockSize returns the logical block size in bytes.
func (b *Backend) BlockSize() int { return b.bs }

// Blocks returns the capacity in logical blocks.
func (b *Backend) Blocks() uint64 { return b.blocks.Load() }

// DirectAlign returns the alignment in bytes that offsets, buffer
// addresses and buffer lengths need for an I/O to take the O_DIRECT path,
// or 0 when direct I/O is off. Buffer pools size their alignment from it.
func (b *Backend) DirectAlign() int { return int(b.align) }

// IsBlockDevice reports whether the backend is a block device rather than
// a regular file.
func (b *Backend) IsBlockDevice() bool { return b.blockDev }

// ReadOnly reports whether the backend was opened read-only.
func (b *Backend) ReadOnly() bool { return b.readOnly }

// Flush makes every completed write durable (fdatasync). It blocks until
// the device reports completion. On a read-only backend it does nothing.
func (b *Backend) Flush() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	if b.readOnly {
		return nil
	}
	if e := fdatasync(b.fd); e != 0 {
		return b.osErr("fdatasync", -1, e)
	}
	return nil
}

// Close waits for calls in progress, makes completed writes durable
// (fdatasync) and closes the descriptors. The descriptors are closed even
// when the sync fails; that failure is returned. Every later call,
// including a second Close, returns blockdev.ErrClosed.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	b.closed = true
	if b.ring != nil {
		b.stopRing() // nothing in flight: each I/O holds b.mu for reading
	}
	var err error
	if !b.readOnly {
		if e := fdatasync(b.fd); e != 0 {
			err = b.osErr("fdatasync", -1, e)
		}
	}
	for _, fd := range []int{b.dfd, int(b.buf.Load())} {
		if fd < 0 {
			continue
		}
		if e := toErrno(syscall.Close(fd)); e != 0 && err == nil {
			err = b.osErr("close", -1, e)
		}
	}
	return err
}
