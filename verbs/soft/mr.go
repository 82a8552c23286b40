package soft

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/verbs"
)

// memoryRegion is a soft ibv_mr. Remote operations executed by the soft NIC
// acquire the MR for the duration of the access; Close waits for them, so
// the caller may unmap the memory once Close returns.
type memoryRegion struct {
	pd     *protectionDomain
	buf    []byte
	addr   uint64
	lkey   uint32
	rkey   uint32
	access verbs.Access

	invalidated atomic.Bool  // remote access revoked by SEND_WITH_INV
	closing     atomic.Bool  // Close started: no new accesses
	refs        atomic.Int64 // accesses in progress

	mu     sync.Mutex // guards closed; cond waits for refs to drain
	cond   sync.Cond
	closed bool
}

var _ verbs.MemoryRegion = (*memoryRegion)(nil)

func (mr *memoryRegion) Buf() []byte          { return mr.buf }
func (mr *memoryRegion) Addr() uint64         { return mr.addr }
func (mr *memoryRegion) LKey() uint32         { return mr.lkey }
func (mr *memoryRegion) RKey() uint32         { return mr.rkey }
func (mr *memoryRegion) Access() verbs.Access { return mr.access }

// span checks that [addr, addr+length) lies inside the MR, without
// overflow, and returns the offset of addr.
func (mr *memoryRegion) span(addr, length uint64) (uint64, bool) {
	if addr < mr.addr {
		return 0, false
	}
	off := addr - mr.addr
	size := uint64(len(mr.buf))
	if off > size || length > size-off {
		return 0, false
	}
	return off, true
}

// acquire starts an access by the soft NIC; false once Close started.
func (mr *memoryRegion) acquire() bool {
	mr.refs.Add(1)
	if mr.closing.Load() {
		mr.release()
		return false
	}
	return true
}

// release ends an access started by acquire.
func (mr *memoryRegion) release() {
	if mr.refs.Add(-1) == 0 && mr.closing.Load() {
		mr.mu.Lock()
		mr.cond.Broadcast()
		mr.mu.Unlock()
	}
}

// Close deregisters the MR: its keys stop resolving at once, and Close
// returns after remote accesses in progress have finished. Work requests
// still referencing the MR are the caller's bug, as on hardware.
func (mr *memoryRegion) Close() error {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return fmt.Errorf("%w: memory region", verbs.ErrClosed)
	}
	mr.closed = true
	d := mr.pd.dev
	d.removeMR(mr)
	mr.closing.Store(true)
	for mr.refs.Load() > 0 {
		mr.cond.Wait()
	}
	d.release(&d.nMR)
	mr.pd.unuse()
	return nil
}
