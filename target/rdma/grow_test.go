package rdma

import (
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// sendReads sends n 4 KiB reads (keyed) that the fake core will hold.
func sendReads(t *testing.T, h *rawHost, n int, cid0 uint16) {
	t.Helper()
	for i := range n {
		s := h.ioSQE(nvme.IORead, cid0+uint16(i), uint64(i)*4096, 4096, i*4096, 0)
		if err := h.send(capsule(&s, nil)); err != nil {
			t.Fatal(err)
		}
	}
}

// heldRelease makes the fake core hold I/O until the returned func is
// called; it is also called when the test ends, so a failing test does not
// leave Close waiting for held commands.
func heldRelease(t *testing.T, g *rig) func() {
	ch := make(chan struct{})
	g.core.hold.Store(&ch)
	var once sync.Once
	f := func() { once.Do(func() { close(ch) }) }
	t.Cleanup(f)
	return f
}

func expectOK(t *testing.T, g *rig, h *rawHost, n int) {
	t.Helper()
	for i := range n {
		rsp, err := h.response(g.ctx)
		if err != nil || !rsp.cqe.Status().OK() {
			t.Fatalf("response %d: %v %v", i, err, rsp.cqe.Status())
		}
	}
}

// Issue 12 item 4: a connected queue registers data buffers by what it has
// in flight — a first 1 MiB chunk at Connect, doubling as commands need
// more — not depth × MDTS up front.
func TestDataBuffersGrowWithInFlight(t *testing.T) {
	const mdts = 1 << 20
	g := newRig(t, rigOpts{cfg: Config{MaxDataTransfer: mdts}})
	h := g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN)
	q := g.queueByQID(1)
	st := g.l.Stats()
	small := uint64(q.bootOff + bootSize)
	stride := uint64(q.dataStride)
	if want := small + stride; st.RegisteredBytes != want {
		t.Fatalf("after Connect: %d bytes registered, want %d (receive buffers + one 1 MiB chunk)", st.RegisteredBytes, want)
	}
	release := heldRelease(t, g)
	sendReads(t, h, 8, 100)
	g.waitHeld(8)
	if st := g.l.Stats(); st.RegisteredBytes != small+8*stride {
		t.Fatalf("8 commands in flight: %d bytes registered, want %d", st.RegisteredBytes, small+8*stride)
	}
	release()
	expectOK(t, g, h, 8)
	g.core.hold.Store(nil)
	// Nothing more is registered for commands that fit in what is there.
	sendReads(t, h, 8, 200)
	expectOK(t, g, h, 8)
	if st := g.l.Stats(); st.RegisteredBytes != small+8*stride {
		t.Fatalf("after reuse: %d bytes registered", st.RegisteredBytes)
	}
}

// Past Config.MaxDataBufferBytes a queue does not grow: its commands wait
// in NeedBuffer for its own buffers and all complete.
func TestDataBufferCapWaits(t *testing.T) {
	const mdts = 1 << 20
	g := newRig(t, rigOpts{cfg: Config{MaxDataTransfer: mdts, MaxDataBufferBytes: growChunkBytes}})
	h := g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN)
	release := heldRelease(t, g)
	sendReads(t, h, 8, 100)
	g.waitHeld(1) // the first chunk's one buffer
	st := g.waitStats("growth denied", func(s Stats) bool { return s.GrowthDenied > 0 })
	q := g.queueByQID(1)
	if small := uint64(q.bootOff + bootSize); st.RegisteredBytes != small+uint64(q.dataStride) {
		t.Fatalf("registered %d bytes past the cap", st.RegisteredBytes)
	}
	release()
	expectOK(t, g, h, 8)
}
