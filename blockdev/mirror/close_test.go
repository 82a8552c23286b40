package mirror_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// errVanished is the final flush of a replica that is gone.
var errVanished = errors.New("replica vanished: connection reset")

// vanishing is a leg whose Close (its final flush) fails.
type vanishing struct{ blockdev.Backend }

func (v vanishing) Close() error {
	v.Backend.Close()
	return errVanished
}

// failMembership refuses every fault record (a deposed or partitioned
// owner) and counts the attempts.
type failMembership struct{ okMembership }

func (f *failMembership) Fault(leg string, cause error) error {
	f.okMembership.Fault(leg, cause)
	return errors.New("no quorum")
}

// TestCloseVanishedCopy: a remote copy whose fault is already recorded
// does not make Close fail when its final flush fails; an in-sync copy
// whose final flush fails is recorded faulted through Membership before
// Close returns nil, or Close fails with ErrFenced when that record
// fails; the local copy's failed final flush is always reported.
func TestCloseVanishedCopy(t *testing.T) {
	const bs, blocks = 512, 64
	t.Run("faulted leg", func(t *testing.T) {
		mb := &okMembership{}
		m := newMirror(t, mb, mirrorConfigSmall(), mem.New(blocks, bs))
		if err := m.AddLeg("gone", vanishing{mem.New(blocks, bs)}, mirror.Faulted); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatalf("Close with a faulted copy that vanished: %v (want nil)", err)
		}
		if f := mb.list(); len(f) != 0 {
			t.Fatalf("faults recorded %v, want none (already faulted)", f)
		}
	})
	t.Run("in-sync leg recorded", func(t *testing.T) {
		mb := &okMembership{}
		m := newMirror(t, mb, mirrorConfigSmall(), mem.New(blocks, bs), vanishing{mem.New(blocks, bs)})
		if err := m.WriteAt([][]byte{make([]byte, bs)}, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := m.Close(); err != nil {
			t.Fatalf("Close: %v (want nil: the copy was recorded faulted)", err)
		}
		if f := mb.list(); !slices.Equal(f, []string{legName(1)}) {
			t.Fatalf("faults recorded %v, want [%s]", f, legName(1))
		}
		if st := m.Legs()[1].State; st != mirror.Faulted {
			t.Fatalf("leg state %v after Close, want faulted", st)
		}
	})
	t.Run("in-sync leg not recorded", func(t *testing.T) {
		mb := &failMembership{}
		m := newMirror(t, mb, mirrorConfigSmall(), mem.New(blocks, bs), vanishing{mem.New(blocks, bs)})
		err := m.Close()
		if !errors.Is(err, mirror.ErrFenced) || !errors.Is(err, errVanished) {
			t.Fatalf("Close: %v (want ErrFenced and the flush's error)", err)
		}
		if n := len(mb.list()); n != 2 {
			t.Fatalf("%d fault attempts, want 2 (one retry)", n)
		}
	})
	t.Run("local leg", func(t *testing.T) {
		mb := &okMembership{}
		m := newMirror(t, mb, mirrorConfigSmall(), vanishing{mem.New(blocks, bs)}, mem.New(blocks, bs))
		if err := m.Close(); !errors.Is(err, errVanished) {
			t.Fatalf("Close: %v (want the local copy's error)", err)
		}
		if f := mb.list(); len(f) != 0 {
			t.Fatalf("faults recorded %v, want none", f)
		}
	})
}
