package mirror_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

const region = 16 << 10 // mirrorConfigSmall's region size

// spyLeg counts the bytes written to a backend and can hold region-sized
// writes (the rebuild's copies) until released.
type spyLeg struct {
	blockdev.Backend
	written atomic.Int64
	holds   atomic.Int32  // region-sized writes still to hold
	hold    chan struct{} // a held write waits for a value or close
	held    chan uint64   // lba of each held write
	onWrite func(n int)   // after each write
}

func (s *spyLeg) WriteAt(bufs [][]byte, lba uint64, fl blockdev.WriteFlags) error {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n == region && s.holds.Add(-1) >= 0 {
		s.held <- lba
		<-s.hold
	}
	err := s.Backend.WriteAt(bufs, lba, fl)
	s.written.Add(int64(n))
	if s.onWrite != nil {
		s.onWrite(n)
	}
	return err
}

// TestRebuildCopyExcludesWrites: a write to the region being copied
// waits until the copy is done, so the copy (read from the local leg
// before the write) never lands over the write on the rebuilt leg.
func TestRebuildCopyExcludesWrites(t *testing.T) {
	const bs = 4096
	local := mem.New(64, bs)
	spy := &spyLeg{Backend: mem.New(64, bs), hold: make(chan struct{}), held: make(chan uint64, 1)}
	spy.holds.Store(1)
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local)
	defer m.Close()
	if err := m.WriteAt([][]byte{pat(8*bs, bs, 0, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.AddLeg("new", spy, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	rb := make(chan error, 1)
	go func() { rb <- m.Rebuild(context.Background(), "new", mirror.RebuildOptions{}) }()
	if lba := <-spy.held; lba != 0 {
		t.Fatalf("first copy at lba %d", lba)
	}
	// The copy of region 0 has read the local leg and waits to write.
	wr := make(chan error, 1)
	go func() { wr <- m.WriteAt([][]byte{pat(bs, bs, 2, 2)}, 2, 0) }()
	notDone(t, wr, "a write to the region being copied")
	close(spy.hold)
	if err := <-wr; err != nil {
		t.Fatal(err)
	}
	if err := <-rb; err != nil {
		t.Fatal(err)
	}
	sameAs(t, "rebuilt leg", whole(t, spy.Backend), whole(t, local), bs)
}

// fakeClock's Sleep advances its time at once.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps int
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1e9, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.sleeps++
	return nil
}

// degraded returns a mirror over local and a spy leg, with the spy leg
// faulted (by the caller: SetState) and the given regions written while
// it was.
func degraded(t *testing.T, blocks uint64, bs int, regions ...uint64) (*mirror.Mirror, *mem.Backend, *spyLeg) {
	t.Helper()
	local, spy := mem.New(blocks, bs), &spyLeg{Backend: mem.New(blocks, bs)}
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local, spy)
	if err := m.WriteAt([][]byte{pat(int(blocks)*bs, bs, 0, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.SetState(legName(1), mirror.Faulted); err != nil {
		t.Fatal(err)
	}
	bpr := uint64(region / bs)
	for i, r := range regions {
		lba := r*bpr + uint64(i)%bpr
		if err := m.WriteAt([][]byte{pat(bs, bs, lba, 2)}, lba, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.SetState(legName(1), mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	spy.written.Store(0)
	return m, local, spy
}

// TestRebuildCopiesOnlyDirty: only the regions written while the leg was
// faulted are copied, once each, and the leg ends identical.
func TestRebuildCopiesOnlyDirty(t *testing.T) {
	const bs = 512
	m, local, spy := degraded(t, 4096, bs, 1, 5, 5, 6, 100)
	defer m.Close()
	if got := m.Legs()[1].DirtyBytes; got != 4*region {
		t.Fatalf("dirty bytes before the rebuild: %d, want %d", got, 4*region)
	}
	if err := m.SetState(legName(1), mirror.InSync); !errors.Is(err, mirror.ErrState) {
		t.Fatalf("InSync with dirty regions: %v, want ErrState", err)
	}
	if err := m.Rebuild(context.Background(), legName(1), mirror.RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := spy.written.Load(); got != 4*region {
		t.Fatalf("rebuild wrote %d bytes, want %d (4 dirty regions)", got, 4*region)
	}
	p, err := m.Progress(legName(1))
	if err != nil || p.Running || p.Done != 4*region || p.Total != 4*region || p.Err != nil {
		t.Fatalf("progress after the rebuild: %+v, %v", p, err)
	}
	if err := m.SetState(legName(1), mirror.InSync); err != nil {
		t.Fatal(err)
	}
	sameAs(t, "rebuilt leg", whole(t, spy.Backend), whole(t, local), bs)
}

// TestRebuildFullCopyOfNewLeg: a leg added with no bitmap gets every
// region, the short last one included.
func TestRebuildFullCopyOfNewLeg(t *testing.T) {
	const bs, blocks = 512, 4096 + 3 // last region is 3 blocks
	local := mem.New(blocks, bs)
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local)
	defer m.Close()
	if err := m.WriteAt([][]byte{pat(blocks*bs, bs, 0, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	spy := &spyLeg{Backend: mem.New(blocks, bs)}
	if err := m.AddLeg("new", spy, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	if err := m.Rebuild(context.Background(), "new", mirror.RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := spy.written.Load(); got != blocks*bs {
		t.Fatalf("full copy wrote %d bytes, want %d", got, blocks*bs)
	}
	sameAs(t, "new leg", whole(t, spy.Backend), whole(t, local), bs)
}

// TestRebuildRateLimit: with a rate limit, the bytes copied by any moment
// never exceed one region (the burst) plus rate × elapsed time, and the
// limiter does not sleep much more than needed.
func TestRebuildRateLimit(t *testing.T) {
	const bs, blocks = 4096, 256 // 1 MiB: 64 regions
	const rate = 64 << 10
	m, _, spy := degraded(t, blocks, bs)
	defer m.Close()
	if _, err := m.RemoveLeg(legName(1)); err != nil {
		t.Fatal(err)
	}
	if err := m.AddLeg("new", spy, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	start := clk.Now()
	var copied int64
	spy.onWrite = func(n int) {
		copied += int64(n)
		el := clk.Now().Sub(start).Seconds()
		if limit := float64(region) + rate*el; float64(copied) > limit {
			t.Errorf("%d bytes copied after %.3fs: more than %.0f", copied, el, limit)
		}
	}
	if err := m.Rebuild(context.Background(), "new", mirror.RebuildOptions{BytesPerSecond: rate, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	total := float64(blocks * bs)
	el := clk.Now().Sub(start).Seconds()
	if min := (total - region) / rate; el < min || el > min+float64(region)/rate {
		t.Fatalf("rebuild of %.0f bytes at %d B/s took %.3fs, want %.3fs (+ one region)", total, rate, el, min)
	}
	p, _ := m.Progress("new")
	if p.Rate < rate*0.9 || p.Rate > rate*1.1 {
		t.Fatalf("reported rate %.0f, want about %d", p.Rate, rate)
	}
	// Unlimited: no sleep at all.
	spy.onWrite = nil
	if err := m.SetState("new", mirror.Faulted); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteAt([][]byte{pat(bs, bs, 0, 3)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := m.SetState("new", mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	clk2 := newFakeClock()
	if err := m.Rebuild(context.Background(), "new", mirror.RebuildOptions{Clock: clk2}); err != nil {
		t.Fatal(err)
	}
	if clk2.sleeps != 0 {
		t.Fatalf("unlimited rebuild slept %d times", clk2.sleeps)
	}
}

// TestRebuildProgress: Progress read during the rebuild (at each copy)
// has Done non-decreasing up to Total, a positive rate and ETA while
// running, and reports the end.
func TestRebuildProgress(t *testing.T) {
	const bs, blocks = 4096, 256
	m, _, spy := degraded(t, blocks, bs, 0, 3, 4, 7, 9, 10, 15)
	defer m.Close()
	clk := newFakeClock()
	var samples []mirror.Progress
	spy.onWrite = func(int) {
		p, err := m.Progress(legName(1))
		if err != nil {
			t.Error(err)
		}
		samples = append(samples, p)
	}
	if err := m.Rebuild(context.Background(), legName(1), mirror.RebuildOptions{BytesPerSecond: region, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	if len(samples) != 7 {
		t.Fatalf("%d copies, want 7", len(samples))
	}
	var last int64
	for i, p := range samples {
		if !p.Running || p.Total != 7*region || p.Done < last || p.Done > p.Total {
			t.Fatalf("sample %d: %+v (previous done %d)", i, p, last)
		}
		if i > 0 && (p.Rate <= 0 || p.ETA <= 0) {
			t.Fatalf("sample %d: rate %.0f ETA %v", i, p.Rate, p.ETA)
		}
		last = p.Done
	}
	p, _ := m.Progress(legName(1))
	if p.Running || p.Done != p.Total || p.ETA != 0 || p.Finished.IsZero() || p.Err != nil {
		t.Fatalf("after the rebuild: %+v", p)
	}
}

// TestRebuildStops: a cancelled rebuild stops and leaves the regions it
// did not copy dirty; a later one finishes them. Rebuild refuses legs
// that are not syncing.
func TestRebuildStops(t *testing.T) {
	const bs = 4096
	m, local, spy := degraded(t, 256, bs, 1, 2, 3, 4)
	defer m.Close()
	if err := m.Rebuild(context.Background(), "local", mirror.RebuildOptions{}); !errors.Is(err, mirror.ErrState) {
		t.Fatalf("rebuild of the local leg: %v", err)
	}
	if err := m.Rebuild(context.Background(), "nope", mirror.RebuildOptions{}); !errors.Is(err, mirror.ErrUnknownLeg) {
		t.Fatalf("rebuild of an unknown leg: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	spy.onWrite = func(int) {
		if spy.written.Load() == 2*region {
			cancel()
		}
	}
	if err := m.Rebuild(ctx, legName(1), mirror.RebuildOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled rebuild: %v", err)
	}
	if p, _ := m.Progress(legName(1)); p.Running || !errors.Is(p.Err, context.Canceled) || p.Done != 2*region {
		t.Fatalf("progress of the cancelled rebuild: %+v", p)
	}
	if got := m.Legs()[1].DirtyBytes; got != 2*region {
		t.Fatalf("dirty after the cancelled rebuild: %d, want %d", got, 2*region)
	}
	spy.onWrite = nil
	if err := m.Rebuild(context.Background(), legName(1), mirror.RebuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := spy.written.Load(); got != 4*region {
		t.Fatalf("both rebuilds wrote %d bytes, want %d", got, 4*region)
	}
	sameAs(t, "rebuilt leg", whole(t, spy.Backend), whole(t, local), bs)
	if err := m.SetState(legName(1), mirror.Faulted); err != nil {
		t.Fatal(err)
	}
	if err := m.Rebuild(context.Background(), legName(1), mirror.RebuildOptions{}); !errors.Is(err, mirror.ErrState) {
		t.Fatalf("rebuild of a faulted leg: %v", err)
	}
}
