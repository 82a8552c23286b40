package mirror

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Clock is the time source of a rebuild's rate limit and progress.
// Tests inject a fake one; nil means the wall clock.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done (then it returns ctx.Err()).
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RebuildOptions tune Rebuild.
type RebuildOptions struct {
	// BytesPerSecond limits the copy rate (a token bucket whose burst is
	// one region); 0 means unlimited.
	BytesPerSecond int64
	// Clock: nil means the wall clock.
	Clock Clock
}

// Progress is a rebuild's progress, readable at any time.
type Progress struct {
	Running bool
	// Done and Total are bytes copied and to copy. Done only grows;
	// Total grows if regions are found dirty that were not counted at
	// the start.
	Done, Total int64
	// Rate is the mean copy rate since Started, in bytes per second.
	Rate float64
	// ETA is the time left at Rate (0 when unknown or finished).
	ETA     time.Duration
	Started time.Time
	// Finished is set once the rebuild ended; Err is its error.
	Finished time.Time
	Err      error
}

// rebuildState is the shared state behind Progress.
type rebuildState struct {
	clk     Clock
	started time.Time
	done    atomic.Int64
	total   atomic.Int64
	end     atomic.Pointer[rebuildEnd]
}

type rebuildEnd struct {
	at  time.Time
	err error
}

// progress returns l's last rebuild's progress.
func (l *leg) progress() Progress {
	s := l.prog.Load()
	if s == nil {
		return Progress{}
	}
	return s.progress()
}

// progress returns the progress s describes.
func (s *rebuildState) progress() Progress {
	p := Progress{Started: s.started, Done: s.done.Load(), Total: s.total.Load()}
	now := s.clk.Now()
	if e := s.end.Load(); e != nil {
		p.Finished, p.Err, now = e.at, e.err, e.at
	} else {
		p.Running = true
	}
	if el := now.Sub(s.started).Seconds(); el > 0 {
		p.Rate = float64(p.Done) / el
	}
	if p.Running && p.Rate > 0 && p.Total > p.Done {
		p.ETA = time.Duration(float64(p.Total-p.Done) / p.Rate * float64(time.Second))
	}
	return p
}

// Progress returns the progress of leg's current or last rebuild.
func (m *Mirror) Progress(leg string) (Progress, error) {
	set := m.set.Load()
	i := set.find(leg)
	if i < 0 {
		return Progress{}, fmt.Errorf("%w: %q", ErrUnknownLeg, leg)
	}
	return set.entries[i].l.progress(), nil
}

// bucket is a token bucket over a Clock.
type bucket struct {
	clk    Clock
	rate   float64 // bytes per second; 0: unlimited
	burst  float64
	tokens float64
	last   time.Time
}

// take waits until n bytes may be copied.
func (b *bucket) take(ctx context.Context, n int64) error {
	if b.rate <= 0 {
		return nil
	}
	for {
		now := b.clk.Now()
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
		b.last = now
		if b.tokens >= float64(n) {
			b.tokens -= float64(n)
			return nil
		}
		wait := time.Duration((float64(n) - b.tokens) / b.rate * float64(time.Second))
		if err := b.clk.Sleep(ctx, max(wait, time.Nanosecond)); err != nil {
			return err
		}
	}
}

// Rebuild copies leg's dirty regions (all of them for a leg added
// Syncing or Faulted) from the local leg while I/O goes on, then flushes
// the leg, and returns nil: from then on the leg holds what the local leg
// holds, and keeps doing so because every write goes to it. The caller
// then records the leg in sync (raft) and calls SetState(leg, InSync).
//
// The leg must be Syncing. Each region is copied under its exclusive
// region lock (see doc.go, "Rebuild"). Rebuild stops with an error when
// ctx is done, the leg leaves Syncing or is removed, the leg fails a
// write (it is then recorded faulted like for any write) or the local leg
// fails a read; the regions not copied stay dirty, so a later Rebuild
// resumes. It blocks; run it on a goroutine of the caller. One Rebuild
// per leg at a time.
func (m *Mirror) Rebuild(ctx context.Context, leg string, opt RebuildOptions) (err error) {
	set := m.set.Load()
	i := set.find(leg)
	if i < 0 {
		return fmt.Errorf("%w: %q", ErrUnknownLeg, leg)
	}
	if i == 0 || set.entries[i].state != Syncing {
		return fmt.Errorf("%w: rebuild of %q, which is not syncing", ErrState, leg)
	}
	l := set.entries[i].l
	if !l.rebuilding.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: %q", ErrRebuildRunning, leg)
	}
	defer l.rebuilding.Store(false)
	clk := opt.Clock
	if clk == nil {
		clk = wallClock{}
	}
	bm := l.bitmap()
	st := &rebuildState{clk: clk, started: clk.Now()}
	st.total.Store(m.dirtyBytes(bm))
	l.prog.Store(st)
	defer func() { st.end.Store(&rebuildEnd{at: clk.Now(), err: err}) }()

	rb := int64(m.cfg.RegionBytes)
	tb := bucket{clk: clk, rate: float64(opt.BytesPerSecond), burst: float64(rb), tokens: float64(rb), last: st.started}
	buf := alignedBuffer(m.cfg.RegionBytes)
	vec := [][]byte{nil}
	for r, ok := bm.next(0); ok; r, ok = bm.next(r + 1) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("mirror: rebuild of %q: %w", leg, err)
		}
		if err := m.stillSyncing(l); err != nil {
			return err
		}
		size := m.regionLen(r)
		if size == 0 {
			break // past the end after a shrink
		}
		if err := tb.take(ctx, size); err != nil {
			return fmt.Errorf("mirror: rebuild of %q: %w", leg, err)
		}
		vec[0] = buf[:size]
		copied, err := m.copyRegion(l, bm, r, vec)
		if err != nil {
			return err
		}
		if copied {
			if d := st.done.Add(size); d > st.total.Load() {
				st.total.Store(d)
			}
		}
	}
	if err := m.stillSyncing(l); err != nil {
		return err
	}
	if err := l.b.Flush(); err != nil {
		l.markAll()
		m.fault(l, fmt.Errorf("mirror: leg %q: flush after rebuild: %w", leg, err))
		return fmt.Errorf("mirror: rebuild of %q: flush: %w", leg, err)
	}
	return nil
}

// stillSyncing fails when l is no longer a syncing leg of the mirror.
func (m *Mirror) stillSyncing(l *leg) error {
	set := m.set.Load()
	i := set.index(l)
	if i < 0 {
		return fmt.Errorf("%w: %q was removed during its rebuild", ErrUnknownLeg, l.name)
	}
	if st := set.entries[i].state; st != Syncing {
		return fmt.Errorf("%w: %q became %v during its rebuild", ErrState, l.name, st)
	}
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	return nil
}

// copyRegion copies region r from the local leg to l under r's exclusive
// lock, if r is still dirty; vec[0] is a buffer of the region's length.
func (m *Mirror) copyRegion(l *leg, bm *bitmap, r uint64, vec [][]byte) (bool, error) {
	m.copyMu.Lock()
	defer m.copyMu.Unlock()
	m.locks.lockExclusive(r)
	defer m.locks.unlockExclusive(r)
	// Every write that saw l faulted and touches r has marked r and left;
	// every write from now on sees l syncing and goes to it too.
	if !bm.testAndClear(r) {
		return false, nil
	}
	lba := r * m.bpr
	if err := m.local.b.ReadAt(vec, lba); err != nil {
		bm.setRange(r, r)
		return false, fmt.Errorf("mirror: rebuild of %q: reading region %d from the local leg: %w", l.name, r, err)
	}
	if err := l.b.WriteAt(vec, lba, 0); err != nil {
		bm.setRange(r, r)
		m.fault(l, fmt.Errorf("mirror: leg %q: rebuild write: %w", l.name, err))
		return false, fmt.Errorf("mirror: rebuild of %q: writing region %d: %w", l.name, r, err)
	}
	return true, nil
}

// alignedBuffer returns n bytes starting on a 4096-byte boundary (O_DIRECT
// legs).
func alignedBuffer(n int) []byte {
	const align = 4096
	raw := make([]byte, n+align)
	off := (align - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%align)) % align
	return raw[off : off+n : off+n]
}
