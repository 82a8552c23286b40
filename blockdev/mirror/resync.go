package mirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Resync makes every in-sync remote leg identical to the local leg while
// I/O goes on: it copies every region of the volume from the local leg
// to each of them, one region at a time under the region's exclusive
// lock, rate limited like Rebuild (opt), then flushes them. The legs stay
// in sync throughout: every write still goes to all of them (see doc.go,
// "Resync after an unclean failover").
//
// Why: after the owner was lost, writes it had in flight and never
// acknowledged may be on some copies and not others. Any content is
// valid for those blocks, but all copies must hold the same one, or a
// read after a later failover could return different bytes for a block
// nobody rewrote. The new owner calls Resync once its mirror is built.
//
// A leg that fails a copy write or the final flush is recorded faulted
// like for any write, with every region dirty (its copy is not known to
// match anywhere), so its Rebuild copies it whole; Resync goes on with
// the other legs and returns an error naming the failed ones. A leg that
// leaves InSync during the Resync (faulted, by the caller or by a failed
// write) likewise gets every region dirty. Resync stops with an error
// when ctx is done or the local leg fails a read; the legs not finished
// then stay marked for a full copy if they are ever faulted, and the
// caller should run Resync again. It blocks; one Resync at a time
// (ErrRebuildRunning). ResyncProgress reports its progress.
func (m *Mirror) Resync(ctx context.Context, opt RebuildOptions) (err error) {
	if !m.resyncing.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: resync", ErrRebuildRunning)
	}
	defer m.resyncing.Store(false)
	clk := opt.Clock
	if clk == nil {
		clk = wallClock{}
	}
	legs := m.resyncLegs()
	st := &rebuildState{clk: clk, started: clk.Now()}
	var size int64
	for r := range m.nRegions(m.Blocks()) {
		size += m.regionLen(r)
	}
	st.total.Store(size * int64(len(legs)))
	m.resyncProg.Store(st)
	defer func() { st.end.Store(&rebuildEnd{at: clk.Now(), err: err}) }()

	var failed []error
	drop := func(l *leg, e error) {
		failed = append(failed, e)
		legs = deleteLeg(legs, l)
	}
	rb := int64(m.cfg.RegionBytes)
	tb := bucket{clk: clk, rate: float64(opt.BytesPerSecond), burst: float64(rb), tokens: float64(rb), last: st.started}
	buf := alignedBuffer(m.cfg.RegionBytes)
	vec := [][]byte{nil}
	for r := uint64(0); len(legs) > 0; r++ {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("mirror: resync: %w", err)
		}
		if m.closed.Load() {
			return blockdev.ErrClosed
		}
		size := m.regionLen(r)
		if size == 0 {
			break
		}
		for range legs { // each leg's copy counts (the burst is one region)
			if err := tb.take(ctx, size); err != nil {
				return fmt.Errorf("mirror: resync: %w", err)
			}
		}
		vec[0] = buf[:size]
		done, werrs, lerr := m.resyncRegion(legs, r, vec)
		if lerr != nil {
			return lerr
		}
		st.done.Add(size * int64(done))
		for l, e := range werrs {
			drop(l, e)
		}
	}
	for _, l := range append([]*leg(nil), legs...) {
		if !m.inSync(l) {
			drop(l, fmt.Errorf("mirror: resync of %q: it left in-sync", l.name))
			continue
		}
		if err := l.b.Flush(); err != nil {
			m.fault(l, fmt.Errorf("mirror: leg %q: flush after resync: %w", l.name, err))
			drop(l, fmt.Errorf("mirror: resync of %q: flush: %w", l.name, err))
			continue
		}
		l.resync.Store(false)
	}
	return errors.Join(failed...)
}

// resyncLegs marks the remote legs in sync now as being resynced (a
// fault from now on marks their every region dirty) and returns them.
func (m *Mirror) resyncLegs() []*leg {
	m.ctlMu.Lock()
	defer m.ctlMu.Unlock()
	var out []*leg
	for _, e := range m.set.Load().entries[1:] {
		if e.state == InSync {
			e.l.resync.Store(true)
			out = append(out, e.l)
		}
	}
	return out
}

// inSync reports whether l is an in-sync leg of the mirror now.
func (m *Mirror) inSync(l *leg) bool {
	set := m.set.Load()
	i := set.index(l)
	return i > 0 && set.entries[i].state == InSync
}

// resyncRegion copies region r from the local leg to every leg of legs
// that is still in sync, under r's exclusive lock; vec[0] is a buffer of
// the region's length. It returns how many legs got the copy, the legs
// that failed (recorded faulted), and the local leg's read error.
func (m *Mirror) resyncRegion(legs []*leg, r uint64, vec [][]byte) (int, map[*leg]error, error) {
	m.copyMu.Lock()
	defer m.copyMu.Unlock()
	m.locks.lockExclusive(r)
	defer m.locks.unlockExclusive(r)
	lba := r * m.bpr
	if err := m.local.b.ReadAt(vec, lba); err != nil {
		return 0, nil, fmt.Errorf("mirror: resync: reading region %d from the local leg: %w", r, err)
	}
	var n int
	var failed map[*leg]error
	for _, l := range legs {
		var err error
		if !m.inSync(l) {
			err = fmt.Errorf("mirror: resync of %q: it left in-sync", l.name)
		} else if err = l.b.WriteAt(vec, lba, 0); err != nil {
			m.fault(l, fmt.Errorf("mirror: leg %q: resync write: %w", l.name, err))
			err = fmt.Errorf("mirror: resync of %q: writing region %d: %w", l.name, r, err)
		} else {
			n++
			continue
		}
		if failed == nil {
			failed = map[*leg]error{}
		}
		failed[l] = err
	}
	return n, failed, nil
}

func deleteLeg(legs []*leg, l *leg) []*leg {
	for i := range legs {
		if legs[i] == l {
			return append(legs[:i:i], legs[i+1:]...)
		}
	}
	return legs
}

// MayDiverge reports whether a write-class operation failed after it
// may have reached some in-sync legs and not others — it failed with
// ErrFenced (a leg failed and its fault could not be recorded) or
// ErrLocalFaulted — so the legs the catalogue calls in sync may differ
// in its blocks until a Resync. The owner uses it to decide whether the
// copies are known identical when it closes the mirror. Any goroutine.
func (m *Mirror) MayDiverge() bool { return m.diverged.Load() }

// ResyncProgress returns the progress of the current or last Resync
// (zero before any). Done and Total count bytes written to legs: each
// region once per leg resynced.
func (m *Mirror) ResyncProgress() Progress {
	s := m.resyncProg.Load()
	if s == nil {
		return Progress{}
	}
	return s.progress()
}
