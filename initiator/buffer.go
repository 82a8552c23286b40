package initiator

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/regmem"
)

// Buffer is a registered data buffer from one IOQueue's pool (or the
// admin queue's). Its memory stays registered, with remote read and write
// rights, for the life of the controller; commands name it by a keyed SGL
// of subtype 0x0 and the pool MR's rkey. See the package doc for when the
// caller may touch it.
type Buffer struct {
	b     []byte
	addr  uint64
	lkey  uint32
	rkey  uint32
	pool  *bufferPool
	idx   int32
	inUse bool
	// ext marks a view of a Session MemRegion made by a queue goroutine
	// for one zero-copy command (no pool; never handed to callers).
	ext bool
}

// Bytes returns the whole registered buffer (MaxTransfer bytes for an I/O
// queue's pool). IOs use its first Blocks*BlockSize bytes.
func (b *Buffer) Bytes() []byte { return b.b }

// sge describes the first n bytes of the buffer as a local SGE.
func (b *Buffer) sge(n int) verbs.SGE {
	return verbs.SGE{Addr: b.addr, Length: uint32(n), LKey: b.lkey}
}

// bufferPool is a fixed set of equal registered buffers in one mapping
// (verbs/regmem), registered in memory regions of at most
// min(regmem.MaxChunk, the device's MaxMRSize) bytes that each hold whole
// buffers. It has no lock: its owner (an IOQueue's goroutine, or the
// admin queue under its mutex) serialises use.
type bufferPool struct {
	bufSize int
	region  *regmem.Region
	reg     *regmem.Registration
	bufs    []Buffer
	free    []int32 // stack of free buffer indices
}

// poolAccess: the target RDMA-READs host-to-controller data and
// RDMA-WRITEs controller-to-host data; local write for in-capsule sends
// is not needed but remote write requires it anyway.
const poolAccess = verbs.AccessLocalWrite | verbs.AccessRemoteRead | verbs.AccessRemoteWrite

// newBufferPool allocates and registers n buffers of bufSize bytes on pd,
// in memory regions no larger than min(maxMRChunk, maxMRSize). With pd
// nil (NVMe/TCP: data is copied to and from the socket) nothing is
// registered.
func newBufferPool(pd verbs.ProtectionDomain, n, bufSize int, maxMRSize uint64) (*bufferPool, error) {
	if n <= 0 || bufSize <= 0 {
		return nil, fmt.Errorf("%w: buffer pool of %d x %d bytes", ErrInvalid, n, bufSize)
	}
	limit := uint64(maxMRChunk)
	if maxMRSize > 0 && maxMRSize < limit {
		limit = maxMRSize
	}
	if uint64(bufSize) > limit {
		return nil, fmt.Errorf("%w: buffer of %d bytes exceeds the MR size limit %d", ErrInvalid, bufSize, limit)
	}
	chunk := int(limit/uint64(bufSize)) * bufSize // whole buffers per region
	region, err := regmem.Alloc(n * bufSize)
	if err != nil {
		return nil, fmt.Errorf("initiator: buffer pool: %w", err)
	}
	mem := region.Bytes()[: n*bufSize : n*bufSize]
	regmem.AdviseHuge(mem)
	var reg *regmem.Registration
	if pd != nil {
		reg, err = regmem.Register(pd, mem, chunk, poolAccess)
		if err != nil {
			_ = region.Free()
			return nil, fmt.Errorf("initiator: register %d-byte buffer pool: %w", len(mem), err)
		}
	}
	p := &bufferPool{bufSize: bufSize, region: region, reg: reg, bufs: make([]Buffer, n), free: make([]int32, 0, n)}
	for i := range p.bufs {
		off := i * bufSize
		p.bufs[i] = Buffer{b: mem[off : off+bufSize : off+bufSize], pool: p, idx: int32(i)}
		if reg != nil {
			p.bufs[i].addr, p.bufs[i].lkey, p.bufs[i].rkey = reg.Addr(off), reg.LKey(off), reg.RKey(off)
		}
	}
	for i := n - 1; i >= 0; i-- {
		p.free = append(p.free, int32(i))
	}
	return p, nil
}

// alloc takes a free buffer.
func (p *bufferPool) alloc() (*Buffer, bool) {
	if len(p.free) == 0 {
		return nil, false
	}
	i := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	b := &p.bufs[i]
	b.inUse = true
	return b, true
}

// release returns b to the pool. It reports false (and does nothing) for a
// buffer of another pool or one that is not allocated.
func (p *bufferPool) release(b *Buffer) bool {
	if b == nil || b.pool != p || !b.inUse {
		return false
	}
	b.inUse = false
	p.free = append(p.free, b.idx)
	return true
}

// owns reports whether b is an allocated buffer of this pool.
func (p *bufferPool) owns(b *Buffer) bool { return b != nil && b.pool == p && b.inUse }

// close deregisters and frees everything. Callers must make sure no QP
// can still access the memory (QPs closed first).
func (p *bufferPool) close() error {
	var errs []error
	if p.reg != nil {
		if err := p.reg.Close(); err != nil {
			errs = append(errs, err)
		}
		p.reg = nil
	}
	if p.region != nil {
		if err := p.region.Free(); err != nil {
			errs = append(errs, err)
		}
		p.region = nil
	}
	p.bufs = nil
	p.free = nil
	return errors.Join(errs...)
}
