package mirror

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// State is a leg's replication state, as the catalogue records it.
type State uint8

const (
	// InSync: the leg holds every acknowledged write. Every write-class
	// operation waits for it.
	InSync State = iota + 1
	// Syncing: the leg is being rebuilt. It receives every write (and the
	// operation waits for it, so that it can be declared in sync at any
	// moment), and Rebuild copies the regions it missed.
	Syncing
	// Faulted: the leg receives no I/O; the mirror records in its dirty
	// bitmap every region written meanwhile.
	Faulted
)

// String returns the catalogue's name for s.
func (s State) String() string {
	switch s {
	case InSync:
		return "in-sync"
	case Syncing:
		return "syncing"
	case Faulted:
		return "faulted"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// maxLegs bounds the legs of one mirror (the local one included), so that
// per-I/O state is a fixed-size array.
const maxLegs = 8

// leg is one replica. The struct lives as long as the leg is part of the
// mirror; its state lives in the leg set (legEntry).
type leg struct {
	name    string
	b       blockdev.Backend
	async   blockdev.Async        // nil: blocking calls on the workers
	fixed   blockdev.FixedBuffers // nil: no registered memory
	batcher blockdev.AsyncBatcher // nil: not plugged

	bmMu  sync.RWMutex // held for reading while marking, for writing while Resize swaps dirty
	dirty *bitmap      // regions written while the leg was faulted (or all: no history)

	fixedRegs atomic.Pointer[[]blockdev.FixedRegion] // leg's handle by mirror handle-1; 0: unregistered
	plugs     atomic.Int32                           // Plug calls on batcher not yet matched by Unplug

	rebuilding atomic.Bool
	prog       atomic.Pointer[rebuildState] // the last Rebuild's, nil before

	// resync is set (under Mirror.ctlMu) when a Resync starts on the
	// leg and cleared when it has finished it: until then the leg's copy
	// may differ anywhere, so a fault marks its every region dirty.
	resync atomic.Bool
}

func newLeg(name string, b blockdev.Backend, dirty *bitmap) *leg {
	l := &leg{name: name, b: b, dirty: dirty}
	l.async, _ = b.(blockdev.Async)
	l.fixed, _ = b.(blockdev.FixedBuffers)
	l.batcher, _ = b.(blockdev.AsyncBatcher)
	return l
}

// markDirty sets regions [r0, r1] in l's bitmap.
func (l *leg) markDirty(r0, r1 uint64) {
	l.bmMu.RLock()
	l.dirty.setRange(r0, r1)
	l.bmMu.RUnlock()
}

// markAll sets every region (the leg needs a full copy).
func (l *leg) markAll() {
	l.bmMu.RLock()
	if l.dirty.n > 0 {
		l.dirty.setRange(0, l.dirty.n-1)
	}
	l.bmMu.RUnlock()
}

// bitmap returns l's dirty bitmap.
func (l *leg) bitmap() *bitmap {
	l.bmMu.RLock()
	defer l.bmMu.RUnlock()
	return l.dirty
}

// fixedHandle returns l's registration for the mirror handle reg, or 0.
func (l *leg) fixedHandle(reg blockdev.FixedRegion) blockdev.FixedRegion {
	p := l.fixedRegs.Load()
	if p == nil || reg == 0 || uint64(reg) > uint64(len(*p)) {
		return 0
	}
	return (*p)[reg-1]
}

// legEntry is a leg's state in one leg set.
type legEntry struct {
	l     *leg
	state State
	// ep, when state is Faulted, is the fault being recorded (not yet
	// committed, or failed to commit): every write-class operation that
	// sees it waits for it, because until the fault is durably recorded
	// the catalogue still calls the leg in sync. nil: the fault is
	// recorded (or the state came from the caller).
	ep *episode
}

// legSet is an immutable snapshot of the legs and their states. Writers
// load it once per operation (an atomic pointer load); state changes swap
// in a new one under Mirror.ctlMu. entries[0] is the local leg.
type legSet struct {
	entries []legEntry
}

// index returns l's position in s, or -1.
func (s *legSet) index(l *leg) int {
	for i := range s.entries {
		if s.entries[i].l == l {
			return i
		}
	}
	return -1
}

// find returns the entry named name, or -1.
func (s *legSet) find(name string) int {
	for i := range s.entries {
		if s.entries[i].l.name == name {
			return i
		}
	}
	return -1
}

// pending reports whether a fault is being recorded on some leg (the
// async path then leaves the operation to the blocking path, which waits).
func (s *legSet) pending() bool {
	for i := range s.entries {
		if s.entries[i].ep != nil {
			return true
		}
	}
	return false
}

// with returns a copy of s with entry i replaced by e.
func (s *legSet) with(i int, e legEntry) *legSet {
	ns := &legSet{entries: append([]legEntry(nil), s.entries...)}
	ns.entries[i] = e
	return ns
}
