package replica

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const (
	mBlocks = 2048
	mBS     = 4096
	legName = "node2"
)

// mirrorRig is a mirror over a local leg and one Leg to an in-process
// replica serving remote.
type mirrorRig struct {
	m      *mirror.Mirror
	b      blockdev.Backend // m.Backend()
	local  blockdev.Backend
	remote blockdev.Backend // the replica target's backend
	node   *replicaNode
	fabric *soft.Fabric
	leg    *Leg
	mem    *membership
}

func newMirrorRig(t *testing.T, local, remote blockdev.Backend, mod func(*LegConfig)) *mirrorRig {
	t.Helper()
	fabric := soft.NewFabric()
	var release func()
	if g, ok := remote.(*gated); ok {
		release = g.release
	}
	n := newReplicaRelease(t, fabric, remote, release)
	cfg := legConfig(fabric, n)
	if mod != nil {
		mod(&cfg)
	}
	leg := openLeg(t, cfg)
	ms := newMembership()
	m, err := mirror.New(mirror.Config{LocalName: "node1", Local: local, Membership: ms, RegionBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddLeg(legName, leg, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() }) // closes leg too (its own cleanup then sees ErrClosed)
	return &mirrorRig{m: m, b: m.Backend(), local: local, remote: remote, node: n, fabric: fabric, leg: leg, mem: ms}
}

func fill(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7) + byte(i>>12)
	}
	return p
}

func readBack(t *testing.T, b blockdev.Backend, lba uint64, n int) []byte {
	t.Helper()
	p := make([]byte, n)
	if err := b.ReadAt([][]byte{p}, lba); err != nil {
		t.Fatalf("ReadAt(%d): %v", lba, err)
	}
	return p
}

func (r *mirrorRig) legState(t *testing.T) mirror.LegStatus {
	t.Helper()
	for _, s := range r.m.Legs() {
		if s.Name == legName {
			return s
		}
	}
	t.Fatalf("leg %s not in the mirror", legName)
	return mirror.LegStatus{}
}

// TestMirrorWritesLandOnBoth: writes (blocking, FUA, async), write zeroes
// and flush through a mirror over a local mem leg and a Leg reach the
// local backend and the replica's backend alike; nothing faults.
func TestMirrorWritesLandOnBoth(t *testing.T) {
	r := newMirrorRig(t, mem.New(mBlocks, mBS), mem.New(mBlocks, mBS), nil)
	a := fill(64<<10, 1)
	if err := r.b.WriteAt([][]byte{a}, 10, 0); err != nil {
		t.Fatal(err)
	}
	f := fill(8<<10, 2)
	if err := r.b.WriteAt([][]byte{f[:4096], f[4096:]}, 100, blockdev.WriteFUA); err != nil {
		t.Fatal(err)
	}
	as := fill(16<<10, 3)
	done := make(chanDone, 1)
	if !r.b.(blockdev.Async).SubmitWrite(as, 200, 0, done) {
		t.Fatal("mirror refused an async write")
	}
	if err := within(t, done, 30*time.Second, "async write"); err != nil {
		t.Fatal(err)
	}
	if err := r.b.WriteZeroes(12, 2); err != nil {
		t.Fatal(err)
	}
	if err := r.b.Flush(); err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), a...)
	clear(want[2*mBS : 4*mBS])
	for _, side := range []struct {
		name string
		b    blockdev.Backend
	}{{"local", r.local}, {"replica", r.remote}} {
		if got := readBack(t, side.b, 10, len(a)); !bytes.Equal(got, want) {
			t.Errorf("%s: blocks 10.. differ from what was written", side.name)
		}
		if got := readBack(t, side.b, 100, len(f)); !bytes.Equal(got, f) {
			t.Errorf("%s: FUA vectored write missing", side.name)
		}
		if got := readBack(t, side.b, 200, len(as)); !bytes.Equal(got, as) {
			t.Errorf("%s: async write missing", side.name)
		}
	}
	if st := r.legState(t); st.State != mirror.InSync {
		t.Fatalf("leg %v after clean writes", st.State)
	}
	r.mem.mu.Lock()
	defer r.mem.mu.Unlock()
	if len(r.mem.faults) != 0 {
		t.Fatalf("faults recorded: %v", r.mem.faults)
	}
}

// TestMirrorReplicaLostFaultsLeg: the replica node goes away (listener
// and target closed); the next write through the mirror fails on the leg
// (the controller is lost and LossTimeout is 0), the mirror records the
// fault through Membership.Fault naming the leg with the leg's error,
// and — the record succeeding — the write completes and is on the local
// leg. Both the blocking and the async path.
func TestMirrorReplicaLostFaultsLeg(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(map[bool]string{false: "blocking", true: "async"}[async], func(t *testing.T) {
			r := newMirrorRig(t, mem.New(mBlocks, mBS), mem.New(mBlocks, mBS), nil)
			if err := r.b.WriteAt([][]byte{fill(mBS, 9)}, 0, 0); err != nil {
				t.Fatal(err)
			}
			r.node.stop()
			p := fill(8<<10, 5)
			var err error
			if async {
				done := make(chanDone, 1)
				if !r.b.(blockdev.Async).SubmitWrite(p, 40, 0, done) {
					t.Fatal("mirror refused an async write")
				}
				err = within(t, done, 30*time.Second, "async write after the replica left")
			} else {
				ch := make(chan error, 1)
				go func() { ch <- r.b.WriteAt([][]byte{p}, 40, 0) }()
				err = within(t, ch, 30*time.Second, "write after the replica left")
			}
			if err != nil {
				t.Fatalf("write with the fault recorded: %v", err)
			}
			if got := within(t, r.mem.called, 30*time.Second, "Membership.Fault"); got != legName {
				t.Fatalf("Fault(%q), want %q", got, legName)
			}
			r.mem.mu.Lock()
			cause := r.mem.causes[0]
			r.mem.mu.Unlock()
			var ioe *IOError
			if !errors.As(cause, &ioe) || !errors.Is(cause, blockdev.ErrMedium) || !errors.Is(cause, initiator.ErrControllerLost) {
				t.Fatalf("fault cause %v (%T), want a replica *IOError wrapping ErrMedium and ErrControllerLost", cause, cause)
			}
			if st := r.legState(t); st.State != mirror.Faulted {
				t.Fatalf("leg %v after the replica left, want faulted", st.State)
			}
			if got := readBack(t, r.local, 40, len(p)); !bytes.Equal(got, p) {
				t.Fatal("acknowledged write missing on the local leg")
			}
		})
	}
}

// TestMirrorFenced: when the fault cannot be recorded (no quorum), the
// write fails with ErrFenced, which the target maps to a path error
// (blockdev.ErrPathUnavailable).
func TestMirrorFenced(t *testing.T) {
	r := newMirrorRig(t, mem.New(mBlocks, mBS), mem.New(mBlocks, mBS), nil)
	r.mem.fail = errors.New("no quorum")
	r.node.stop()
	err := r.b.WriteAt([][]byte{fill(mBS, 1)}, 3, 0)
	if !errors.Is(err, mirror.ErrFenced) || !errors.Is(err, blockdev.ErrPathUnavailable) {
		t.Fatalf("write with the fault unrecorded: %v, want ErrFenced wrapping ErrPathUnavailable", err)
	}
}

// TestMirrorZeroCopy: a write through the mirror from a buffer the
// caller registered with RegisterFixed reaches the replica by RDMA from
// that buffer: the leg's session counts it as zero-copy bytes and copied
// none.
func TestMirrorZeroCopy(t *testing.T) {
	local := &fixedMem{Backend: mem.New(mBlocks, mBS)}
	r := newMirrorRig(t, local, mem.New(mBlocks, mBS), nil)
	fb, ok := r.b.(blockdev.FixedBuffers)
	if !ok {
		t.Fatal("mirror over a FixedBuffers local leg does not expose FixedBuffers")
	}
	region := make([]byte, 1<<20)
	reg, err := fb.RegisterFixed(region)
	if err != nil {
		t.Fatal(err)
	}
	before := r.leg.Stats()
	buf := region[64<<10 : 96<<10]
	copy(buf, fill(len(buf), 7))
	want := append([]byte(nil), buf...)
	done := make(chanDone, 1)
	if !fb.SubmitWriteFixed(buf, 300, blockdev.WriteFUA, reg, done) {
		t.Fatal("mirror refused a fixed write")
	}
	if err := within(t, done, 30*time.Second, "fixed write"); err != nil {
		t.Fatal(err)
	}
	after := r.leg.Stats()
	if z := after.ZeroCopyBytes - before.ZeroCopyBytes; z < uint64(len(buf)) {
		t.Fatalf("zero-copy bytes %d, want ≥ %d (copied %d)", z, len(buf), after.CopiedBytes-before.CopiedBytes)
	}
	if c := after.CopiedBytes - before.CopiedBytes; c != 0 {
		t.Fatalf("%d bytes copied for a registered buffer", c)
	}
	if got := readBack(t, r.remote, 300, len(buf)); !bytes.Equal(got, want) {
		t.Fatal("zero-copy write missing on the replica")
	}
	fb.UnregisterFixed(reg)
	// The same memory after UnregisterFixed takes the copy path.
	before = r.leg.Stats()
	if !fb.SubmitWriteFixed(buf, 300, 0, reg, done) {
		t.Fatal("mirror refused a write after unregister")
	}
	if err := within(t, done, 30*time.Second, "write after unregister"); err != nil {
		t.Fatal(err)
	}
	if after := r.leg.Stats(); after.ZeroCopyBytes != before.ZeroCopyBytes {
		t.Fatalf("zero copy after UnregisterFixed (%d bytes)", after.ZeroCopyBytes-before.ZeroCopyBytes)
	}
}
