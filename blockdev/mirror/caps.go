package mirror

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Backend returns the mirror as the target should see it: a
// blockdev.Backend and blockdev.Async that also implements
// blockdev.AsyncBatcher, blockdev.FixedBuffers and blockdev.Resizer
// exactly when the local leg does (capabilities are found by type
// assertion, so each combination is its own type). The result is the
// same for every call; it does not implement the target's Unwrapper (the
// data path must go through the mirror).
func (m *Mirror) Backend() blockdev.Backend {
	var c uint8
	if m.local.batcher != nil {
		c |= 1
	}
	if m.local.fixed != nil {
		c |= 2
	}
	if _, ok := m.local.b.(blockdev.Resizer); ok {
		c |= 4
	}
	b, f, r := batcher{m}, fixed{m}, resizer{m}
	switch c {
	case 1:
		return vB{m, b}
	case 2:
		return vF{m, f}
	case 3:
		return vBF{m, b, f}
	case 4:
		return vR{m, r}
	case 5:
		return vBR{m, b, r}
	case 6:
		return vFR{m, f, r}
	case 7:
		return vBFR{m, b, f, r}
	}
	return m
}

// The capability views: *Mirror plus the optional interfaces the local
// leg has.
type (
	vB struct {
		*Mirror
		batcher
	}
	vF struct {
		*Mirror
		fixed
	}
	vBF struct {
		*Mirror
		batcher
		fixed
	}
	vR struct {
		*Mirror
		resizer
	}
	vBR struct {
		*Mirror
		batcher
		resizer
	}
	vFR struct {
		*Mirror
		fixed
		resizer
	}
	vBFR struct {
		*Mirror
		batcher
		fixed
		resizer
	}
)

// batcher implements blockdev.AsyncBatcher for a mirror.
type batcher struct{ bm *Mirror }

// Plug plugs every leg that batches (the local one, and remote ones
// whose adapters batch). Any goroutine; never blocks.
//
// The leg counts the Plug before l.plugs shows it: an Unplug of a burst
// that began before the leg was added may take any Plug l.plugs shows
// and release it on the leg, and a leg releases only what it holds (one
// that holds none ignores the Unplug, and would then stay plugged for
// good, holding its writes: TestPlugAcrossAddLeg).
func (b batcher) Plug() {
	set := b.bm.set.Load()
	for i := range set.entries {
		if l := set.entries[i].l; l.batcher != nil {
			l.batcher.Plug()
			l.plugs.Add(1)
		}
	}
}

// Unplug releases one Plug on every leg it plugged (a leg added since
// has none to release), the remote legs first and the local one (entry
// 0) last, so the copies' network round trip overlaps the local burst's
// submission (an io_uring_enter that may do the writes inline). It may
// complete I/O on the calling goroutine (the legs' Unplug may); it never
// calls Membership.Fault.
func (b batcher) Unplug() {
	set := b.bm.set.Load()
	for i := len(set.entries) - 1; i >= 0; i-- {
		l := set.entries[i].l
		if l.batcher == nil {
			continue
		}
		for {
			p := l.plugs.Load()
			if p <= 0 {
				break
			}
			if l.plugs.CompareAndSwap(p, p-1) {
				l.batcher.Unplug()
				break
			}
		}
	}
}

// fixed implements blockdev.FixedBuffers for a mirror.
type fixed struct{ fm *Mirror }

// RegisterFixed registers region with the local leg (its error is the
// result) and with every remote leg that takes fixed buffers (the remote
// adapter registers it with the RDMA device, so the same memory is the
// source of the local write and of the replication transfer). A remote
// leg that refuses gets plain submissions. Legs added later get the
// registration too. It may block; queue setup only.
func (f fixed) RegisterFixed(region []byte) (blockdev.FixedRegion, error) {
	m := f.fm
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	if m.closed.Load() {
		return 0, fmt.Errorf("%w: %w", blockdev.ErrFixedUnavailable, blockdev.ErrClosed)
	}
	h, err := m.local.fixed.RegisterFixed(region)
	if err != nil {
		return 0, err
	}
	slot := -1
	for i, r := range m.regs {
		if r == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		m.regs = append(m.regs, nil)
		slot = len(m.regs) - 1
	}
	m.regs[slot] = region
	setHandle(m.local, slot, h)
	set := m.set.Load()
	for i := 1; i < len(set.entries); i++ {
		m.registerOn(set.entries[i].l, slot)
	}
	return blockdev.FixedRegion(slot + 1), nil
}

// UnregisterFixed drops reg on every leg; unknown handles are ignored.
func (f fixed) UnregisterFixed(reg blockdev.FixedRegion) {
	m := f.fm
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	slot := int(reg) - 1
	if reg == 0 || slot >= len(m.regs) || m.regs[slot] == nil {
		return
	}
	m.regs[slot] = nil
	for _, e := range m.set.Load().entries {
		if h := e.l.fixedHandle(reg); h != 0 {
			e.l.fixed.UnregisterFixed(h)
			setHandle(e.l, slot, 0)
		}
	}
}

// SubmitReadFixed reads from the local leg through its registration.
func (f fixed) SubmitReadFixed(buf []byte, lba uint64, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	m := f.fm
	if m.closed.Load() || m.localFailed() != nil {
		return false
	}
	return m.local.fixed.SubmitReadFixed(buf, lba, m.local.fixedHandle(reg), done)
}

// SubmitWriteFixed is SubmitWrite naming the registration: each leg that
// registered it gets a fixed submission.
func (f fixed) SubmitWriteFixed(buf []byte, lba uint64, flags blockdev.WriteFlags, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	return f.fm.submitWrite(buf, lba, flags, reg, done)
}

// registerOn registers slot's region on l, if l takes fixed buffers.
// ctlMu held.
func (m *Mirror) registerOn(l *leg, slot int) {
	if l.fixed == nil {
		return
	}
	if h, err := l.fixed.RegisterFixed(m.regs[slot]); err == nil {
		setHandle(l, slot, h)
	}
}

// registerAllOn gives a new leg every registration. ctlMu held.
func (m *Mirror) registerAllOn(l *leg) {
	for slot, r := range m.regs {
		if r != nil {
			m.registerOn(l, slot)
		}
	}
}

// unregisterAllOn drops a leaving leg's registrations. ctlMu held.
func (m *Mirror) unregisterAllOn(l *leg) {
	for slot := range m.regs {
		if h := l.fixedHandle(blockdev.FixedRegion(slot + 1)); h != 0 {
			l.fixed.UnregisterFixed(h)
			setHandle(l, slot, 0)
		}
	}
}

// setHandle stores l's handle for slot (copy on write). ctlMu held.
func setHandle(l *leg, slot int, h blockdev.FixedRegion) {
	var cur []blockdev.FixedRegion
	if p := l.fixedRegs.Load(); p != nil {
		cur = *p
	}
	next := make([]blockdev.FixedRegion, max(len(cur), slot+1))
	copy(next, cur)
	next[slot] = h
	l.fixedRegs.Store(&next)
}

// resizer implements blockdev.Resizer for a mirror.
type resizer struct{ rm *Mirror }

// Resize resizes every leg (each must be a blockdev.Resizer), the local
// one first, and grows the dirty bitmaps; regions new to a leg that is
// not in sync are dirty. Not while a leg rebuilds. The caller serialises
// it with I/O beyond the smaller size, as blockdev.Resizer says. A leg
// that fails to resize is left to the caller (the mirror's size is then
// unchanged if it was the local one; otherwise the local leg has the new
// size and the error names the leg).
func (r resizer) Resize(blocks uint64) error {
	m := r.rm
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	set := m.set.Load()
	for _, e := range set.entries {
		if _, ok := e.l.b.(blockdev.Resizer); !ok {
			return fmt.Errorf("mirror: leg %q cannot resize", e.l.name)
		}
		if e.l.rebuilding.Load() {
			return fmt.Errorf("%w: leg %q is rebuilding", ErrRebuildRunning, e.l.name)
		}
	}
	var errs []error
	for i, e := range set.entries {
		if err := e.l.b.(blockdev.Resizer).Resize(blocks); err != nil {
			if i == 0 {
				return err
			}
			errs = append(errs, fmt.Errorf("mirror: resizing leg %q: %w", e.l.name, err))
		}
		if i == 0 {
			m.blocks.Store(blocks)
		}
		e.l.bmMu.Lock()
		if n := m.nRegions(blocks); n > e.l.dirty.n {
			e.l.dirty = e.l.dirty.grown(n, e.state != InSync)
		}
		e.l.bmMu.Unlock()
	}
	return errors.Join(errs...)
}
