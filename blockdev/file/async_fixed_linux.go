package file

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// Test hooks for the kernel calls (fault injection: ENOMEM, EPERM).
var (
	registerSparse = (*uring.Ring).RegisterSparse
	updateBuffer   = (*uring.Ring).UpdateBuffer
)

// fixedTable is the fixed-buffer side of a shared ring
// (blockdev.FixedBuffers), used by all the ring's backends. A region
// registered by several backends on the ring (the same base and size: one
// transport queue's memory serving several namespaces) occupies its table
// entries once and is pinned once; it is reference counted and leaves the
// table when its last holder unregisters it or closes.
//
// mu serialises RegisterFixed / UnregisterFixed (the table's indices, the
// kernel calls, refs and every backend's fixedHeld); regions is also read
// by submitters under the ring's mutex, so it is only written with both
// held.
type fixedTable struct {
	mu      sync.Mutex
	size    int    // entries in the kernel table
	tried   bool   // RegisterSparse attempted
	broken  error  // the kernel refused the table: no fixed buffers on this ring
	used    []bool // per table index
	regions []fixedRegion
	gen     uint32
}

// fixedRegion is one registration: table entries first..first+n-1 hold
// consecutive MaxFixedBuffer pieces of [base, base+size).
type fixedRegion struct {
	base, size uintptr
	first, n   uint16
	gen        uint32 // 0: free slot
	refs       int    // RegisterFixed calls not yet undone (guarded by the table's mu)
}

func fixedHandle(slot int, gen uint32) blockdev.FixedRegion {
	return blockdev.FixedRegion(uint64(gen)<<32 | uint64(slot))
}

var _ blockdev.FixedBuffers = (*Backend)(nil)

// RegisterFixed implements blockdev.FixedBuffers: region is installed in
// the shared ring's fixed-buffer table (one entry per GiB), or, when a
// backend on the same ring registered the very same region, shares its
// entries. The first call on a ring creates the sparse table. Errors wrap
// blockdev.ErrFixedUnavailable (and the errno: ENOMEM for RLIMIT_MEMLOCK,
// EPERM, EINVAL on kernels without sparse tables).
func (b *Backend) RegisterFixed(region []byte) (blockdev.FixedRegion, error) {
	a := b.ring
	if a == nil {
		return 0, fmt.Errorf("%w: no io_uring fast path", blockdev.ErrFixedUnavailable)
	}
	if len(region) == 0 {
		return 0, fmt.Errorf("%w: empty region", blockdev.ErrFixedUnavailable)
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return 0, fmt.Errorf("%w: %w", blockdev.ErrFixedUnavailable, blockdev.ErrClosed)
	}
	t := &a.fixed
	t.mu.Lock()
	defer t.mu.Unlock()
	h, err := t.register(a, region)
	if err != nil {
		return 0, err
	}
	if b.fixedHeld == nil {
		b.fixedHeld = make(map[blockdev.FixedRegion]int)
	}
	b.fixedHeld[h]++
	b.stats.fixedRegions.Add(1)
	return h, nil
}

// register installs region (or takes another reference to an identical
// registration). Caller holds t.mu.
func (t *fixedTable) register(a *sharedRing, region []byte) (blockdev.FixedRegion, error) {
	if !t.tried {
		t.tried = true
		if err := registerSparse(a.ring, t.size); err != nil {
			t.broken = err
		} else {
			t.used = make([]bool, t.size)
		}
	}
	if t.broken != nil {
		return 0, fmt.Errorf("%w: %w", blockdev.ErrFixedUnavailable, t.broken)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(region)))
	for i := range t.regions {
		if r := &t.regions[i]; r.gen != 0 && r.base == base && r.size == uintptr(len(region)) {
			r.refs++
			return fixedHandle(i, r.gen), nil
		}
	}
	n := (len(region) + uring.MaxFixedBuffer - 1) / uring.MaxFixedBuffer
	first := freeRun(t.used, n)
	if first < 0 {
		return 0, fmt.Errorf("%w: table of %d entries full", blockdev.ErrFixedUnavailable, t.size)
	}
	for i := range n {
		piece := region[i*uring.MaxFixedBuffer : min(len(region), (i+1)*uring.MaxFixedBuffer)]
		if err := updateBuffer(a.ring, first+i, piece); err != nil {
			for j := range i {
				_ = updateBuffer(a.ring, first+j, nil)
			}
			if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENXIO) {
				t.broken = err // the table itself is unusable
			}
			return 0, fmt.Errorf("%w: %w", blockdev.ErrFixedUnavailable, err)
		}
		t.used[first+i] = true
	}
	t.gen++
	if t.gen == 0 {
		t.gen = 1
	}
	r := fixedRegion{base: base, size: uintptr(len(region)), first: uint16(first), n: uint16(n), gen: t.gen, refs: 1}
	a.mu.Lock()
	slot := -1
	for i := range t.regions {
		if t.regions[i].gen == 0 {
			slot = i
			break
		}
	}
	if slot < 0 {
		slot = len(t.regions)
		t.regions = append(t.regions, fixedRegion{})
	}
	t.regions[slot] = r
	a.mu.Unlock()
	return fixedHandle(slot, r.gen), nil
}

// UnregisterFixed implements blockdev.FixedBuffers: the backend's
// reference to reg is dropped; when it was the last on the ring, new
// submissions stop using the region at once and its table entries are
// emptied (the kernel keeps the pages pinned until I/Os in flight against
// them complete). A handle this backend does not hold is ignored.
func (b *Backend) UnregisterFixed(reg blockdev.FixedRegion) {
	a := b.ring
	if a == nil {
		return
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return // Close dropped every registration
	}
	t := &a.fixed
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.fixedHeld[reg] == 0 {
		return
	}
	if b.fixedHeld[reg]--; b.fixedHeld[reg] == 0 {
		delete(b.fixedHeld, reg)
	}
	t.release(a, reg)
	b.stats.fixedRegions.Add(^uint64(0))
}

// releaseFixed drops every registration b holds (Close).
func (b *Backend) releaseFixed() {
	a := b.ring
	t := &a.fixed
	t.mu.Lock()
	defer t.mu.Unlock()
	for reg, n := range b.fixedHeld {
		for range n {
			t.release(a, reg)
			b.stats.fixedRegions.Add(^uint64(0))
		}
	}
	b.fixedHeld = nil
}

// release drops one reference to reg. Caller holds t.mu.
func (t *fixedTable) release(a *sharedRing, reg blockdev.FixedRegion) {
	r, ok := t.lookup(reg)
	if !ok {
		return
	}
	slot := uint32(reg)
	if t.regions[slot].refs--; t.regions[slot].refs > 0 {
		return
	}
	a.mu.Lock()
	t.regions[slot] = fixedRegion{}
	a.mu.Unlock()
	for i := range int(r.n) {
		// Emptying an entry only fails for an index outside the table,
		// which a registered region never has.
		_ = updateBuffer(a.ring, int(r.first)+i, nil)
		t.used[int(r.first)+i] = false
	}
}

// lookup returns the live region reg names. Caller holds the ring's mutex
// (or the table's, for writers).
func (t *fixedTable) lookup(reg blockdev.FixedRegion) (fixedRegion, bool) {
	slot, gen := uint32(reg), uint32(uint64(reg)>>32)
	if gen == 0 || int(slot) >= len(t.regions) || t.regions[slot].gen != gen {
		return fixedRegion{}, false
	}
	return t.regions[slot], true
}

// index returns the table entry holding all of buf within reg, or false
// when reg is stale or buf is not inside one of its pieces. Caller holds
// the ring's mutex.
func (t *fixedTable) index(reg blockdev.FixedRegion, buf []byte) (uint16, bool) {
	r, ok := t.lookup(reg)
	if !ok {
		return 0, false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	if p < r.base || p-r.base >= r.size || uintptr(len(buf)) > r.size-(p-r.base) {
		return 0, false
	}
	off := p - r.base
	piece := off / uring.MaxFixedBuffer
	if (off+uintptr(len(buf))-1)/uring.MaxFixedBuffer != piece {
		return 0, false // straddles two entries
	}
	return r.first + uint16(piece), true
}

// freeRun returns the first index of n consecutive free entries, or -1.
func freeRun(used []bool, n int) int {
	run := 0
	for i, u := range used {
		if u {
			run = 0
			continue
		}
		run++
		if run == n {
			return i - n + 1
		}
	}
	return -1
}

// SubmitReadFixed implements blockdev.FixedBuffers: SubmitRead with
// IORING_OP_READ_FIXED when buf lies in reg.
func (b *Backend) SubmitReadFixed(buf []byte, lba uint64, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	return b.submit(buf, lba, false, 0, reg, done)
}

// SubmitWriteFixed implements blockdev.FixedBuffers: SubmitWrite with
// IORING_OP_WRITE_FIXED when buf lies in reg.
func (b *Backend) SubmitWriteFixed(buf []byte, lba uint64, flags blockdev.WriteFlags, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	return b.submit(buf, lba, true, flags, reg, done)
}
