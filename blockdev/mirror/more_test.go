package mirror_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// TestRebuildLegFails: the leg failing a copy stops the rebuild, is
// recorded faulted like for any write, and keeps its regions dirty.
func TestRebuildLegFails(t *testing.T) {
	const bs, blocks = 4096, 64 // 16 regions
	mb := &okMembership{}
	m := newMirror(t, mb, mirrorConfigSmall(), mem.New(blocks, bs))
	defer m.Close()
	leg := faulty.New(mem.New(blocks, bs))
	if err := m.AddLeg("new", leg, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	leg.Inject(faulty.Rule{Ops: faulty.OpWrite, Every: 3, Times: 1})
	err := m.Rebuild(context.Background(), "new", mirror.RebuildOptions{})
	if !errors.Is(err, blockdev.ErrMedium) {
		t.Fatalf("rebuild with a failing leg: %v", err)
	}
	st := m.Legs()[1]
	if st.State != mirror.Faulted || st.DirtyBytes != (16-2)*region {
		t.Fatalf("leg after the failed copy: %+v (want faulted, 14 regions dirty)", st)
	}
	// The record is made on a goroutine of the mirror; a write waits for it.
	if err := m.WriteAt([][]byte{pat(bs, bs, 0, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := mb.list(); len(got) != 1 || got[0] != "new" {
		t.Fatalf("faults recorded: %v", got)
	}
	if p, _ := m.Progress("new"); p.Running || p.Err == nil || p.Done != 2*region {
		t.Fatalf("progress: %+v", p)
	}
}

// TestSyncingLegIsWaitedFor: a syncing leg that fails a write is recorded
// faulted before the write completes (it may have been declared in sync
// meanwhile), and the write fails with ErrFenced if that cannot be done.
func TestSyncingLegIsWaitedFor(t *testing.T) {
	const bs = 512
	g := newGate(nil)
	leg := faulty.New(mem.New(64, bs))
	m := newMirror(t, g, mirrorConfigSmall(), mem.New(64, bs))
	defer m.Close()
	if err := m.AddLeg("syncing", leg, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	leg.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
	res := make(chan error, 1)
	go func() { res <- m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0) }()
	<-g.called
	notDone(t, res, "a write failed by a syncing leg")
	g.results <- errors.New("partitioned")
	<-g.called
	g.results <- errors.New("partitioned")
	if err := <-res; !errors.Is(err, mirror.ErrFenced) {
		t.Fatalf("write: %v, want ErrFenced", err)
	}
}

// TestFlushFailureMarksAll: a leg that fails a flush may have lost any
// write since its last one: it is recorded faulted and needs a full copy.
func TestFlushFailureMarksAll(t *testing.T) {
	const bs, blocks = 4096, 64
	mb := &okMembership{}
	leg := faulty.New(mem.New(blocks, bs))
	m := newMirror(t, mb, mirrorConfigSmall(), mem.New(blocks, bs), leg)
	defer m.Close()
	leg.Inject(faulty.Rule{Ops: faulty.OpFlush, Times: 1})
	if err := m.Flush(); err != nil {
		t.Fatalf("Flush with a failing remote leg (recorded): %v", err)
	}
	st := m.Legs()[1]
	if st.State != mirror.Faulted || st.FaultPending || st.DirtyBytes != blocks*bs || len(mb.list()) != 1 {
		t.Fatalf("leg after a failed flush: %+v, faults %v", st, mb.list())
	}
}

// TestResizeGrowsBitmaps: growing marks the new regions dirty on legs
// that are not in sync; a leg that cannot resize makes Resize fail.
func TestResizeGrowsBitmaps(t *testing.T) {
	const bs, blocks = 4096, 64
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), mem.New(blocks, bs), mem.New(blocks, bs), mem.New(blocks, bs))
	defer m.Close()
	if err := m.SetState(legName(2), mirror.Faulted); err != nil {
		t.Fatal(err)
	}
	rs := m.Backend().(blockdev.Resizer)
	if err := rs.Resize(2 * blocks); err != nil {
		t.Fatal(err)
	}
	legs := m.Legs()
	if legs[1].DirtyBytes != 0 || legs[2].DirtyBytes != blocks*bs {
		t.Fatalf("dirty after growing: in-sync %d, faulted %d (want 0, %d)", legs[1].DirtyBytes, legs[2].DirtyBytes, blocks*bs)
	}
	if err := m.WriteAt([][]byte{pat(bs, bs, 2*blocks-1, 1)}, 2*blocks-1, 0); err != nil {
		t.Fatalf("write to the new last block: %v", err)
	}
	if err := m.AddLeg("fixed-size", faulty.New(mem.New(2*blocks, bs)), mirror.InSync); err != nil {
		t.Fatal(err)
	}
	if err := rs.Resize(3 * blocks); err == nil {
		t.Fatal("Resize with a leg that cannot resize succeeded")
	}
}

// fsmMembership commits a fault by applying it to the mirror, as the
// daemon's FSM would (a call back into the mirror from inside Fault).
type fsmMembership struct{ m *mirror.Mirror }

func (f *fsmMembership) Fault(leg string, _ error) error {
	if leg == "local" {
		return nil
	}
	return f.m.SetState(leg, mirror.Faulted)
}

// TestFaultCallsBack: Membership.Fault may call SetState on the mirror.
func TestFaultCallsBack(t *testing.T) {
	const bs = 512
	fm := &fsmMembership{}
	bad := faulty.New(mem.New(64, bs))
	m := newMirror(t, fm, mirrorConfigSmall(), mem.New(64, bs), bad)
	defer m.Close()
	fm.m = m
	bad.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
	if err := m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0); err != nil {
		t.Fatal(err)
	}
	if st := m.Legs()[1]; st.State != mirror.Faulted || st.FaultPending || st.DirtyBytes != region {
		t.Fatalf("leg: %+v", st)
	}
}

// TestSetStateChecks: unknown legs, the local leg and bad states are
// refused; names are unique.
func TestSetStateChecks(t *testing.T) {
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), mem.New(64, 512), mem.New(64, 512))
	defer m.Close()
	if err := m.SetState("nope", mirror.Faulted); !errors.Is(err, mirror.ErrUnknownLeg) {
		t.Fatalf("unknown leg: %v", err)
	}
	if err := m.SetState("local", mirror.Faulted); !errors.Is(err, mirror.ErrState) {
		t.Fatalf("local leg: %v", err)
	}
	if err := m.SetState(legName(1), mirror.State(9)); err == nil {
		t.Fatal("invalid state accepted")
	}
	if err := m.AddLeg(legName(1), mem.New(64, 512), mirror.Syncing); !errors.Is(err, mirror.ErrLegExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	if err := m.AddLeg("small", mem.New(32, 512), mirror.Syncing); err == nil {
		t.Fatal("leg of another size accepted")
	}
	if _, err := m.RemoveLeg("local"); !errors.Is(err, mirror.ErrState) {
		t.Fatalf("removing the local leg: %v", err)
	}
	if _, err := mirror.New(mirror.Config{Local: mem.New(64, 512)}); err == nil {
		t.Fatal("New without Membership")
	}
	if _, err := mirror.New(mirror.Config{Local: mem.New(64, 512), Membership: &okMembership{}, RegionBytes: 3000}); err == nil {
		t.Fatal("region size not a power of two accepted")
	}
}
