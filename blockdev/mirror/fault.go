package mirror

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Membership records replica faults durably. The mirror's owner
// implements it (in rdmablkd: a raft command that marks the replica
// faulted in the catalogue).
//
// Fault records that leg no longer holds every write, because of cause.
// It returns nil only once that record is durable (committed): from then
// on the catalogue no longer counts the leg as in sync, so writes the leg
// misses may be acknowledged. It returns an error when it cannot make the
// record (no quorum, partitioned, this node no longer owns the volume);
// the mirror then fails the writes that needed the record with ErrFenced.
//
// Fault is called from a goroutine of the mirror, never from an I/O
// completion or a caller's submission; it may block (a raft Apply) and may
// be called concurrently for different legs. It should give up within a
// bounded time (the Apply timeout): the operations waiting for it hold
// their regions and per-I/O state, and Close waits for them. The mirror
// holds no lock while it calls Fault, so Fault (or the FSM it drives) may
// call back into the mirror, e.g. SetState(leg, Faulted). For the local leg (name
// Config.LocalName) the call is a report: the volume has stopped serving
// and the result is not waited for.
type Membership interface {
	Fault(leg string, cause error) error
}

// Errors.
var (
	// ErrFenced: a leg failed a write-class operation and the fault could
	// not be recorded (Membership.Fault returned an error), so the
	// operation is not acknowledged. The node has probably lost the
	// volume; the target should report a path error so that the host
	// retries on the new owner. It wraps blockdev.ErrPathUnavailable
	// (the target answers Asymmetric Access Inaccessible).
	ErrFenced error = &pathError{"mirror: replica fault not recorded (fenced)"}
	// ErrLocalFaulted: the local leg failed a write-class operation; the
	// mirror serves no more I/O (its reads would miss writes the other
	// legs have). Errors wrapping it also wrap the leg's error, and it
	// wraps blockdev.ErrPathUnavailable: another node may serve the volume.
	ErrLocalFaulted error = &pathError{"mirror: local leg faulted"}
	// ErrUnknownLeg: no leg has that name.
	ErrUnknownLeg = errors.New("mirror: unknown leg")
	// ErrLegExists: AddLeg with a name already in use.
	ErrLegExists = errors.New("mirror: leg already exists")
	// ErrTooManyLegs: more than 8 legs, local included.
	ErrTooManyLegs = errors.New("mirror: too many legs")
	// ErrState: the leg is not in a state that allows the request
	// (Rebuild of a leg that is not syncing, InSync with dirty regions
	// left, removing the local leg).
	ErrState = errors.New("mirror: leg state does not allow this")
	// ErrRebuildRunning: Rebuild of a leg that is already rebuilding.
	ErrRebuildRunning = errors.New("mirror: rebuild already running")
)

// pathError is a sentinel that wraps blockdev.ErrPathUnavailable, so
// that the target reports it as a path error (another node may serve the
// volume) while the mirror keeps its own message.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }
func (e *pathError) Unwrap() error { return blockdev.ErrPathUnavailable }

// episode is one attempt to record a leg's fault. done is closed when
// Fault has returned; err is its result (readable after done).
type episode struct {
	done chan struct{}
	err  error
}

// fault starts recording l's fault, or joins the attempt under way, and
// returns it; nil when the fault is already recorded (or l is no longer
// a leg, or not in the set at all). It marks l faulted in the leg set at
// once, so operations that start from now on neither send it I/O nor
// complete before the record. Not for the local leg. Any goroutine but an
// I/O completion (it takes ctlMu).
func (m *Mirror) fault(l *leg, cause error) *episode {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	set := m.set.Load()
	i := set.index(l)
	if i < 0 {
		return nil
	}
	e := set.entries[i]
	if e.state == Faulted {
		return e.ep
	}
	if l.resync.Load() {
		l.markAll() // its copy was not resynced yet: full copy
	}
	ep := &episode{done: make(chan struct{})}
	m.set.Store(set.with(i, legEntry{l: l, state: Faulted, ep: ep}))
	go m.record(l, ep, cause)
	return ep
}

// refault starts a new attempt after old failed, unless one is already
// under way or the fault was recorded meanwhile (nil).
func (m *Mirror) refault(l *leg, old *episode) *episode {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	set := m.set.Load()
	i := set.index(l)
	if i < 0 || set.entries[i].state != Faulted || set.entries[i].ep == nil {
		return nil
	}
	if ep := set.entries[i].ep; ep != old {
		return ep
	}
	ep := &episode{done: make(chan struct{})}
	m.set.Store(set.with(i, legEntry{l: l, state: Faulted, ep: ep}))
	go m.record(l, ep, old.err)
	return ep
}

// record runs Membership.Fault for one episode (its own goroutine). On
// success the leg's entry drops the episode before done is closed, so an
// operation that has seen the record complete never finds it pending.
func (m *Mirror) record(l *leg, ep *episode, cause error) {
	err := m.cfg.Membership.Fault(l.name, cause)
	ep.err = err
	if err == nil {
		m.ctlMu.Lock()
		set := m.set.Load()
		if i := set.index(l); i >= 0 && set.entries[i].ep == ep {
			m.set.Store(set.with(i, legEntry{l: l, state: Faulted}))
		}
		m.ctlMu.Unlock()
	}
	close(ep.done)
}

// await waits for ep and returns nil once l's fault is recorded. When the
// attempt failed it makes (or joins) one more; if that fails too the
// result wraps ErrFenced.
func (m *Mirror) await(l *leg, ep *episode) error {
	<-ep.done
	if ep.err == nil {
		return nil
	}
	if ep2 := m.refault(l, ep); ep2 != nil {
		<-ep2.done
		if ep2.err != nil {
			return fmt.Errorf("%w: leg %q: %v", ErrFenced, l.name, ep2.err)
		}
	}
	return nil
}

// localFault is the sticky failure of the local leg.
type localFault struct{ err error }

// failLocal records that the local leg failed a write-class operation:
// from now on every I/O fails. The first failure is reported to
// Membership on a goroutine of its own (not waited for).
func (m *Mirror) failLocal(cause error) error {
	err := fmt.Errorf("%w: %q: %w", ErrLocalFaulted, m.cfg.LocalName, cause)
	m.diverged.Store(true)
	if m.localErr.CompareAndSwap(nil, &localFault{err: err}) {
		go m.cfg.Membership.Fault(m.cfg.LocalName, cause) //nolint:errcheck // a report; the volume is down either way
	}
	return m.localErr.Load().err
}

// localFailed returns the local leg's sticky failure, or nil.
func (m *Mirror) localFailed() error {
	if f := m.localErr.Load(); f != nil {
		return f.err
	}
	return nil
}
