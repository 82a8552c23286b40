package mirror

import (
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// AddLeg adds a remote leg in state st. The leg must have the local
// leg's geometry. InSync asserts that b already holds exactly what the
// local leg holds (a volume created empty on every replica, or a daemon
// restart where the catalogue still calls the replica in sync) and is
// only right while no write-class operation is in flight (before the
// namespace is served: one in flight would reach the local leg and not
// the new one); Syncing
// or Faulted start with every region dirty: the leg's history is unknown,
// so Rebuild copies all of it. The leg gets the fixed-buffer
// registrations made so far, when it takes them. From the moment AddLeg
// returns, write-class operations go to the leg unless st is Faulted.
// The mirror owns b from now on (Close closes it) until RemoveLeg.
func (m *Mirror) AddLeg(name string, b blockdev.Backend, st State) error {
	if st != InSync && st != Syncing && st != Faulted {
		return fmt.Errorf("mirror: AddLeg %q: invalid state %v", name, st)
	}
	if b.BlockSize() != m.bs || b.Blocks() != m.Blocks() {
		return fmt.Errorf("mirror: AddLeg %q: geometry %d x %d does not match the local leg's %d x %d",
			name, b.Blocks(), b.BlockSize(), m.Blocks(), m.bs)
	}
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	set := m.set.Load()
	if set.find(name) >= 0 {
		return fmt.Errorf("%w: %q", ErrLegExists, name)
	}
	if len(set.entries) >= maxLegs {
		return fmt.Errorf("%w: at most %d", ErrTooManyLegs, maxLegs)
	}
	l := newLeg(name, b, newBitmap(m.nRegions(m.Blocks()), st != InSync))
	m.registerAllOn(l)
	ns := &legSet{entries: append(append([]legEntry(nil), set.entries...), legEntry{l: l, state: st})}
	m.set.Store(ns)
	return nil
}

// RemoveLeg takes a remote leg out of the mirror and returns its backend,
// which the caller now owns (and closes). Operations already in flight
// may still complete on it; a running Rebuild of it fails.
func (m *Mirror) RemoveLeg(name string) (blockdev.Backend, error) {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	set := m.set.Load()
	i := set.find(name)
	if i < 0 {
		return nil, fmt.Errorf("%w: %q", ErrUnknownLeg, name)
	}
	if i == 0 {
		return nil, fmt.Errorf("%w: the local leg cannot be removed", ErrState)
	}
	l := set.entries[i].l
	ns := &legSet{entries: append(append([]legEntry(nil), set.entries[:i]...), set.entries[i+1:]...)}
	m.set.Store(ns)
	m.unregisterAllOn(l)
	for l.batcher != nil {
		p := l.plugs.Load()
		if p <= 0 {
			break
		}
		if l.plugs.CompareAndSwap(p, p-1) {
			l.batcher.Unplug()
		}
	}
	return l.b, nil
}

// SetState applies a state the catalogue has committed for a remote leg:
//
//   - Faulted: the leg stops receiving I/O; regions written from now on
//     are marked dirty. (A fault the mirror detected itself is already
//     Faulted; SetState then only confirms it.)
//   - Syncing (from Faulted): the leg receives every write again; call
//     Rebuild to copy the dirty regions.
//   - InSync (from Syncing): only once Rebuild has returned nil and no
//     region is dirty (else ErrState).
//
// Safe under concurrent I/O: the leg set is swapped atomically.
func (m *Mirror) SetState(name string, st State) error {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	set := m.set.Load()
	i := set.find(name)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownLeg, name)
	}
	if i == 0 {
		return fmt.Errorf("%w: the local leg's state is not set here", ErrState)
	}
	e := set.entries[i]
	switch st {
	case Faulted:
		// A fault the caller committed: nothing to wait for any more.
		if e.state != Faulted && e.l.resync.Load() {
			e.l.markAll() // its copy was not resynced yet: full copy
		}
	case Syncing:
		// From Faulted the catalogue has recorded the fault (it moved
		// on), so writes need not wait for our own attempt any more.
	case InSync:
		if e.state != InSync {
			if e.state != Syncing || e.l.rebuilding.Load() || e.l.bitmap().count() != 0 {
				return fmt.Errorf("%w: leg %q is %v with %d dirty regions: rebuild it first",
					ErrState, name, e.state, e.l.bitmap().count())
			}
		}
	default:
		return fmt.Errorf("mirror: SetState %q: invalid state %v", name, st)
	}
	m.set.Store(set.with(i, legEntry{l: e.l, state: st}))
	return nil
}

// LegStatus describes one leg.
type LegStatus struct {
	Name  string
	State State
	// Local: this is the local leg (serves reads).
	Local bool
	// FaultPending: the leg failed and its fault is not recorded yet
	// (writes wait), or recording it failed (writes fail with ErrFenced).
	FaultPending bool
	// DirtyBytes: bytes in the dirty regions (what Rebuild would copy).
	DirtyBytes int64
	// Rebuild: the last Rebuild's progress (zero before any).
	Rebuild Progress
}

// Legs returns the state of every leg, the local one first.
func (m *Mirror) Legs() []LegStatus {
	set := m.set.Load()
	out := make([]LegStatus, len(set.entries))
	for i, e := range set.entries {
		out[i] = LegStatus{
			Name:         e.l.name,
			State:        e.state,
			Local:        i == 0,
			FaultPending: e.ep != nil,
			DirtyBytes:   m.dirtyBytes(e.l.bitmap()),
			Rebuild:      e.l.progress(),
		}
	}
	return out
}

// dirtyBytes is the size of bm's set regions within the volume (the last
// region may be short; regions past the end after a shrink do not count).
func (m *Mirror) dirtyBytes(bm *bitmap) int64 {
	n := min(bm.n, m.nRegions(m.Blocks()))
	if n == 0 {
		return 0
	}
	b := int64(bm.countBelow(n)) * int64(m.cfg.RegionBytes)
	if bm.test(n - 1) {
		b -= int64(m.cfg.RegionBytes) - m.regionLen(n-1)
	}
	return b
}

// regionLen is region r's length in bytes (the last region may be short).
func (m *Mirror) regionLen(r uint64) int64 {
	first := r * m.bpr
	end := min(first+m.bpr, m.Blocks())
	if end <= first {
		return 0
	}
	return int64(end-first) * int64(m.bs)
}
