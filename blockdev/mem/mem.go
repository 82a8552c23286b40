package mem

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// chunkBytes is the allocation unit when blocks are not larger than it.
const chunkBytes = 64 << 10

// chunk is one allocated piece of the volume.
type chunk struct {
	mu   sync.RWMutex // guards data's contents (the slice header never changes)
	data []byte
}

// Backend is an in-memory block device. Create it with New.
type Backend struct {
	blocks         atomic.Uint64 // written by New and Resize (with mu held for writing)
	blockSize      int
	chunkSize      int    // bytes per chunk, a multiple of blockSize
	blocksPerChunk uint64 // chunkSize / blockSize

	mu     sync.RWMutex      // guards chunks and closed
	chunks map[uint64]*chunk // chunk index -> chunk; absent = zeroes
	closed bool
}

var (
	_ blockdev.Backend     = (*Backend)(nil)
	_ blockdev.NonBlocking = (*Backend)(nil)
	_ blockdev.Resizer     = (*Backend)(nil)
)

// New returns an empty (all zero) volume of blocks logical blocks of
// blockSize bytes. It allocates no chunk memory. blockSize must satisfy
// blockdev.ValidBlockSize; New panics otherwise (configuration is validated
// before this point, so a bad size here is a programming error).
func New(blocks uint64, blockSize int) *Backend {
	if !blockdev.ValidBlockSize(blockSize) {
		panic(fmt.Sprintf("mem: invalid block size %d", blockSize))
	}
	cs := max(chunkBytes, blockSize)
	b := &Backend{
		blockSize:      blockSize,
		chunkSize:      cs,
		blocksPerChunk: uint64(cs / blockSize),
		chunks:         make(map[uint64]*chunk),
	}
	b.blocks.Store(blocks)
	return b
}

// BlockSize returns the logical block size in bytes.
func (b *Backend) BlockSize() int { return b.blockSize }

// Blocks returns the capacity in logical blocks.
func (b *Backend) Blocks() uint64 { return b.blocks.Load() }

// NonBlocking reports true: methods only copy memory.
func (b *Backend) NonBlocking() bool { return true }

// ChunksAllocated returns how many chunks currently hold data, for tests
// that check sparseness.
func (b *Backend) ChunksAllocated() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.chunks)
}

// lookup returns chunk idx, allocating it when create is set. It returns
// ErrClosed once the backend is closed; otherwise a nil chunk means the
// chunk holds zeroes.
func (b *Backend) lookup(idx uint64, create bool) (*chunk, error) {
	b.mu.RLock()
	c, closed := b.chunks[idx], b.closed
	b.mu.RUnlock()
	if closed {
		return nil, blockdev.ErrClosed
	}
	if c != nil || !create {
		return c, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, blockdev.ErrClosed
	}
	if c = b.chunks[idx]; c == nil {
		c = &chunk{data: make([]byte, b.chunkSize)}
		b.chunks[idx] = c
	}
	return c, nil
}

// checkIO validates a vector at lba.
func (b *Backend) checkIO(bufs [][]byte, lba uint64) error {
	b.mu.RLock()
	closed := b.closed
	b.mu.RUnlock()
	if closed {
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

// ReadAt copies blocks starting at lba into bufs.
func (b *Backend) ReadAt(bufs [][]byte, lba uint64) error {
	if err := b.checkIO(bufs, lba); err != nil {
		return err
	}
	idx := lba / b.blocksPerChunk
	off := int(lba%b.blocksPerChunk) * b.blockSize
	for _, p := range bufs {
		for len(p) > 0 {
			c, err := b.lookup(idx, false)
			if err != nil {
				return err
			}
			n := min(len(p), b.chunkSize-off)
			if c == nil {
				clear(p[:n])
			} else {
				c.mu.RLock()
				copy(p[:n], c.data[off:])
				c.mu.RUnlock()
			}
			p = p[n:]
			if off += n; off == b.chunkSize {
				idx, off = idx+1, 0
			}
		}
	}
	return nil
}

// WriteAt copies bufs into the volume starting at lba. Data is as durable
// as it will ever be when WriteAt returns, so WriteFUA changes nothing.
func (b *Backend) WriteAt(bufs [][]byte, lba uint64, _ blockdev.WriteFlags) error {
	if err := b.checkIO(bufs, lba); err != nil {
		return err
	}
	idx := lba / b.blocksPerChunk
	off := int(lba%b.blocksPerChunk) * b.blockSize
	for _, p := range bufs {
		for len(p) > 0 {
			c, err := b.lookup(idx, true)
			if err != nil {
				return err
			}
			c.mu.Lock()
			n := copy(c.data[off:], p)
			c.mu.Unlock()
			p = p[n:]
			if off += n; off == b.chunkSize {
				idx, off = idx+1, 0
			}
		}
	}
	return nil
}

// Flush succeeds unless the backend is closed.
func (b *Backend) Flush() error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	return nil
}

// WriteZeroes makes [lba, lba+n) read as zeroes, freeing the chunks the
// range covers completely.
func (b *Backend) WriteZeroes(lba, n uint64) error { return b.zero(lba, n) }

// Discard behaves as WriteZeroes: discarded blocks read back as zeroes.
func (b *Backend) Discard(lba, n uint64) error { return b.zero(lba, n) }

func (b *Backend) zero(lba, n uint64) error {
	b.mu.RLock()
	closed := b.closed
	b.mu.RUnlock()
	if closed {
		return blockdev.ErrClosed
	}
	if !blockdev.RangeOK(lba, n, b.blocks.Load()) {
		return blockdev.ErrOutOfRange
	}
	for n > 0 {
		idx := lba / b.blocksPerChunk
		first := lba % b.blocksPerChunk
		cnt := min(n, b.blocksPerChunk-first)
		if cnt == b.blocksPerChunk {
			b.mu.Lock()
			closed = b.closed
			delete(b.chunks, idx)
			b.mu.Unlock()
			if closed {
				return blockdev.ErrClosed
			}
		} else {
			c, err := b.lookup(idx, false)
			if err != nil {
				return err
			}
			if c != nil {
				bs := uint64(b.blockSize)
				c.mu.Lock()
				clear(c.data[first*bs : (first+cnt)*bs])
				c.mu.Unlock()
			}
		}
		lba, n = lba+cnt, n-cnt
	}
	return nil
}

// Close drops all data; every later call returns blockdev.ErrClosed,
// including a second Close. Calls in progress fail with ErrClosed at their
// next chunk.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	b.closed = true
	b.chunks = nil
	return nil
}

// Resize implements blockdev.Resizer. Shrinking frees the chunks past the
// new end and zeroes the tail of the last one, so that growing again
// reads zeroes there; growing allocates nothing. It returns
// blockdev.ErrClosed after Close.
func (b *Backend) Resize(blocks uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return blockdev.ErrClosed
	}
	if blocks < b.blocks.Load() {
		last, first := blocks/b.blocksPerChunk, blocks%b.blocksPerChunk
		for idx, c := range b.chunks {
			switch {
			case idx > last || (idx == last && first == 0):
				delete(b.chunks, idx)
			case idx == last:
				c.mu.Lock()
				clear(c.data[first*uint64(b.blockSize):])
				c.mu.Unlock()
			}
		}
	}
	b.blocks.Store(blocks)
	return nil
}
