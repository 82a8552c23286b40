package target

import "fmt"

// Controller IDs of the dynamic controller model (NVMe-oF 1.1 §3.3): each
// subsystem hands them out round robin within a range, skipping IDs still
// in use, starting at Options.FirstCNTLID. The range is the target's:
// 1..0xFFEF, or Options.FirstCNTLID..LastCNTLID, or what SetCNTLIDRange
// set last (a subsystem whose next ID lies outside it starts again at its
// first); it applies to every subsystem, the discovery subsystem
// included. Targets that serve the same subsystem to one host need
// disjoint ranges: the Linux host refuses a second path whose controller
// ID another path of the subsystem already has ("Duplicate cntlid"), as
// nvmet's attr_cntlid_min/max avoid.

// Controller ID space (NVMe base spec: 0xFFF0..0xFFFF are reserved).
const (
	minCNTLID = 1
	maxCNTLID = 0xFFEF
)

// packCNTLIDRange packs a range into the word Target.cntlids holds.
func packCNTLIDRange(first, last uint16) uint32 { return uint32(first)<<16 | uint32(last) }

// cntlidRange returns the range subsystems allocate from now.
func (t *Target) cntlidRange() (first, last uint16) {
	r := t.cntlids.Load()
	return uint16(r >> 16), uint16(r)
}

// SetCNTLIDRange makes every subsystem hand out controller IDs from
// first..last from its next new controller on (controllers that exist
// keep their IDs). Any goroutine. It fails, changing nothing, unless
// 1 ≤ first ≤ last ≤ 0xFFEF.
func (t *Target) SetCNTLIDRange(first, last uint16) error {
	if first < minCNTLID || last > maxCNTLID || first > last {
		return fmt.Errorf("target: controller ID range %d-%d: want 1 ≤ first ≤ last ≤ %d", first, last, maxCNTLID)
	}
	t.cntlids.Store(packCNTLIDRange(first, last))
	return nil
}

// CNTLIDRange returns the range set by Options or SetCNTLIDRange.
func (t *Target) CNTLIDRange() (first, last uint16) { return t.cntlidRange() }

// addController allocates a controller ID and registers c. It returns
// false when the range is exhausted, the subsystem was removed or the
// target is closing.
func (s *Subsystem) addController(c *Controller) bool {
	first, last := s.t.cntlidRange()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.removed || s.t.closed.Load() {
		return false
	}
	if s.nextCNTLID < first || s.nextCNTLID > last {
		s.nextCNTLID = first
	}
	for range int(last-first) + 1 {
		id := s.nextCNTLID
		if s.nextCNTLID == last {
			s.nextCNTLID = first
		} else {
			s.nextCNTLID++
		}
		if _, used := s.ctrls[id]; !used {
			c.id = id
			s.ctrls[id] = c
			return true
		}
	}
	return false
}
