package target

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/nvme"
)

// Asymmetric Namespace Access (NVMe base spec 2.0 §8.1.3, Linux nvmet's
// ana code): every namespace belongs to an ANA group (NamespaceConfig.
// ANAGroup, 0 meaning DefaultANAGroup) and every (port, group) pair of a
// subsystem has an ANA state, optimized unless set otherwise. A host that
// reaches one subsystem through several ports (listeners) reads the
// states from the ANA log page (LID 0Ch) of the controller on each port,
// is told about changes with the ANA Change notice, and sends its I/O
// where the state is best.
//
// Scope: the state lives in the subsystem (ANA group IDs are subsystem
// scoped in the spec), keyed by port ID and group, so two subsystems of
// one target using the same group ID are independent. Target.SetANAState
// is a shorthand that sets the pair in every NVM subsystem present.
//
// I/O path: a subsystem's states are an immutable anaTable behind an
// atomic pointer (copy on write, like the namespace table); nil or a
// table without any state that blocks I/O costs execIO one atomic load
// and a branch. A command that passed the check before a state change
// still runs: the change only affects commands parsed after the new
// table was published.

// ANA group limits of this implementation (Identify ANAGRPMAX and
// NANAGRPID; nvmet uses the same maximum).
const (
	// DefaultANAGroup is the group of a namespace configured with
	// ANAGroup 0.
	DefaultANAGroup = 1
	// MaxANAGroup is the largest ANA group ID.
	MaxANAGroup = 128
	// anaTransitionTime is Identify ANATT, seconds: how long a host
	// waits for a group in the change state before giving up on it.
	anaTransitionTime = 10
)

// ErrBadANA: an ANA group outside 1..MaxANAGroup or an ANA state that is
// not one of nvme.ANAState*.
var ErrBadANA = errors.New("target: invalid ANA group or state")

// anaKey is one (port, group) pair of a subsystem.
type anaKey struct {
	port  uint16
	group uint32
}

// anaEntry is the state of a pair and the change count at which it last
// changed.
type anaEntry struct {
	state  uint8
	chgcnt uint64
}

// anaTable is an immutable snapshot of a subsystem's ANA states. Pairs
// missing from states are optimized with change count 0.
type anaTable struct {
	chgcnt uint64 // bumped by every state change in the subsystem
	states map[anaKey]anaEntry
	// blocking: some pair is in a state that fails I/O (inaccessible,
	// persistent loss, change); when false the I/O path skips the lookup.
	blocking bool
}

// anaStates is a subsystem's ANA state: writers serialise on mu and
// publish a new table through cur.
type anaStates struct {
	mu  sync.Mutex
	cur atomic.Pointer[anaTable]
}

// validANAState reports a state a host may be told about.
func validANAState(st uint8) bool {
	switch st {
	case nvme.ANAStateOptimized, nvme.ANAStateNonOptimized, nvme.ANAStateInaccessible,
		nvme.ANAStatePersistentLoss, nvme.ANAStateChange:
		return true
	}
	return false
}

// anaGroupOf maps NamespaceConfig.ANAGroup to the group a namespace is in.
func anaGroupOf(g uint32) (uint32, error) {
	switch {
	case g == 0:
		return DefaultANAGroup, nil
	case g > MaxANAGroup:
		return 0, fmt.Errorf("%w: group %d (want 1..%d)", ErrBadANA, g, MaxANAGroup)
	}
	return g, nil
}

// anaIOStatus is the status an I/O command gets in state st, success for
// the accessible states.
func anaIOStatus(st uint8) nvme.Status {
	switch st {
	case nvme.ANAStateInaccessible:
		return nvme.StatusANAInaccessible
	case nvme.ANAStatePersistentLoss:
		return nvme.StatusANAPersistentLoss
	case nvme.ANAStateChange:
		return nvme.StatusANATransition
	}
	return nvme.StatusSuccess
}

// state returns the state of (port, group) in t (nil: optimized).
func (t *anaTable) state(port uint16, group uint32) anaEntry {
	if t != nil {
		if e, ok := t.states[anaKey{port, group}]; ok {
			return e
		}
	}
	return anaEntry{state: nvme.ANAStateOptimized}
}

// ANAState returns the ANA state of group on port portID in s
// (nvme.ANAState*; optimized unless set otherwise).
func (s *Subsystem) ANAState(portID uint16, group uint32) uint8 {
	return s.ana.cur.Load().state(portID, group).state
}

// ANAChangeCount returns the ANA log change count of s: the number of
// state changes so far.
func (s *Subsystem) ANAChangeCount() uint64 {
	if t := s.ana.cur.Load(); t != nil {
		return t.chgcnt
	}
	return 0
}

// SetANAState sets the ANA state (nvme.ANAState*) of group on port portID.
// When the state changes, the change count goes up and every live
// controller of s connected through that port gets the ANA Change
// notice (if it enabled it in Asynchronous Event Configuration and has
// read the ANA log since the last one). Setting the current state again
// does nothing. I/O parsed afterwards on that port to a namespace of the
// group completes with ANA Inaccessible, ANA Persistent Loss or ANA
// Transition in the corresponding states, without touching the backend.
// The port must exist in the target (ErrNoPort); group is 1..MaxANAGroup
// and state valid (ErrBadANA). States survive the port's removal.
func (s *Subsystem) SetANAState(portID uint16, group uint32, state uint8) error {
	if s.discovery {
		return fmt.Errorf("%w: the discovery subsystem has no ANA groups", ErrBadConfig)
	}
	if err := s.t.checkANA(portID, group, state); err != nil {
		return err
	}
	if !s.setANA(portID, group, state) {
		return nil
	}
	s.t.log.Info("nvmet: ANA state changed", "subnqn", s.nqn, "port", portID, "group", group, "state", state)
	for _, c := range s.Controllers() {
		if c.port.ID == portID {
			c.raiseEvent(nvme.AECANAChange,
				nvme.MakeAsyncEventResult(nvme.AsyncEventTypeNotice, nvme.AsyncEventNoticeANAChange, nvme.LogANA))
		}
	}
	return nil
}

// setANA publishes a table with (port, group) in state and reports
// whether anything changed.
func (s *Subsystem) setANA(port uint16, group uint32, state uint8) bool {
	s.ana.mu.Lock()
	defer s.ana.mu.Unlock()
	old := s.ana.cur.Load()
	if old.state(port, group).state == state {
		return false
	}
	nt := &anaTable{states: make(map[anaKey]anaEntry, 1)}
	if old != nil {
		nt.chgcnt = old.chgcnt
		for k, e := range old.states {
			nt.states[k] = e
		}
	}
	nt.chgcnt++
	nt.states[anaKey{port, group}] = anaEntry{state: state, chgcnt: nt.chgcnt}
	for _, e := range nt.states {
		if anaIOStatus(e.state) != nvme.StatusSuccess {
			nt.blocking = true
			break
		}
	}
	s.ana.cur.Store(nt)
	return true
}

// checkANA validates a SetANAState request.
func (t *Target) checkANA(portID uint16, group uint32, state uint8) error {
	if group == 0 || group > MaxANAGroup {
		return fmt.Errorf("%w: group %d (want 1..%d)", ErrBadANA, group, MaxANAGroup)
	}
	if !validANAState(state) {
		return fmt.Errorf("%w: state %#x", ErrBadANA, state)
	}
	t.mu.Lock()
	_, ok := t.ports[portID]
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %d", ErrNoPort, portID)
	}
	return nil
}

// SetANAState sets the ANA state of group on port portID in every NVM
// subsystem of the target (see Subsystem.SetANAState); subsystems added
// later start optimized. With no subsystem it only validates.
func (t *Target) SetANAState(portID uint16, group uint32, state uint8) error {
	if err := t.checkANA(portID, group, state); err != nil {
		return err
	}
	var errs []error
	for _, s := range t.Subsystems() {
		if err := s.SetANAState(portID, group, state); err != nil && !errors.Is(err, ErrNoPort) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// anaStatus is the ANA verdict for an I/O command to a namespace of group
// on c's port: success unless the group's state there fails I/O. It is on
// the I/O path: one atomic load, a map lookup only when some state of the
// subsystem blocks I/O; no locks, no allocations.
func (c *Controller) anaStatus(group uint32) nvme.Status {
	t := c.subsys.ana.cur.Load()
	if t == nil || !t.blocking {
		return nvme.StatusSuccess
	}
	return anaIOStatus(t.state(c.port.ID, group).state)
}

// anaFlushAllStatus is the ANA verdict for a broadcast Flush: the status
// of the first namespace of tbl whose group fails I/O on c's port.
func (c *Controller) anaFlushAllStatus(tbl *nsTable) nvme.Status {
	t := c.subsys.ana.cur.Load()
	if t == nil || !t.blocking {
		return nvme.StatusSuccess
	}
	for _, n := range tbl.byID {
		if n == nil {
			continue
		}
		if st := anaIOStatus(t.state(c.port.ID, n.anaGroup).state); st != nvme.StatusSuccess {
			return st
		}
	}
	return nvme.StatusSuccess
}

// anaGroups returns the group descriptors of c's ANA log: the default
// group (always, as nvmet) and every group holding a namespace of the
// subsystem, ascending, each with its state on c's port and (unless rgo)
// its NSIDs.
func (c *Controller) anaGroups(rgo bool) (uint64, []nvme.ANAGroupDescriptor) {
	t := c.subsys.ana.cur.Load()
	nst := c.subsys.ns.Load()
	ids := []uint32{DefaultANAGroup}
	for _, n := range nst.byID {
		if n != nil && !slices.Contains(ids, n.anaGroup) {
			ids = append(ids, n.anaGroup)
		}
	}
	slices.Sort(ids)
	groups := make([]nvme.ANAGroupDescriptor, len(ids))
	for i, g := range ids {
		e := t.state(c.port.ID, g)
		groups[i] = nvme.ANAGroupDescriptor{GroupID: g, ChangeCount: e.chgcnt, State: e.state}
		if rgo {
			continue
		}
		for _, n := range nst.byID { // ascending NSIDs
			if n != nil && n.anaGroup == g {
				groups[i].NSIDs = append(groups[i].NSIDs, n.nsid)
			}
		}
	}
	var chg uint64
	if t != nil {
		chg = t.chgcnt
	}
	return chg, groups
}

// anaLog serves the ANA log page (LSP bit 0: Return Groups Only) at
// offset off. Unless RAE is set, reading it re-arms the ANA Change notice.
func (c *Controller) anaLog(b []byte, off uint64, lsp uint8, rae bool) nvme.Status {
	rgo := lsp&nvme.ANALSPRGO != 0
	chg, groups := c.anaGroups(rgo)
	page := make([]byte, nvme.ANALogSize(groups, rgo))
	if _, err := nvme.MarshalANALog(page, chg, groups, rgo); err != nil {
		return nvme.StatusInternalError
	}
	if !rae {
		c.unmask(nvme.AECANAChange)
	}
	return copyLog(b, page, off)
}
