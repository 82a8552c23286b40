package rdma

import (
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// sendReads sends n 4 KiB reads (keyed) that the fake core will hold.
func sendReads(t *testing.T, h *rawHost, n int, cid0 uint16) {
	t.Helper()
	sendReadsOf(t, h, n, cid0, 4096)
}

// sendReadsOf sends n reads of size bytes each (host buffers size apart).
func sendReadsOf(t *testing.T, h *rawHost, n int, cid0 uint16, size uint32) {
	t.Helper()
	for i := range n {
		s := h.ioSQE(nvme.IORead, cid0+uint16(i), uint64(i)*uint64(size), size, i*int(size), 0)
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
// in flight — a first 1 MiB chunk of small (16 KiB) buffers at Connect,
// doubling as small commands need more; large (MDTS) buffers only when a
// command larger than a small buffer comes, doubling likewise — not
// depth × MDTS up front, and not MDTS per 4 KiB read.
func TestDataBuffersGrowWithInFlight(t *testing.T) {
	const mdts = 1 << 20
	g := newRig(t, rigOpts{cfg: Config{MaxDataTransfer: mdts}})
	h := g.connectQueue(rawOpts{qid: 1, depth: 128, dataSize: 8 << 20}, testSubNQN, testHostNQN)
	q := g.queueByQID(1)
	small := uint64(q.bootOff + bootSize)
	chunk := uint64(growChunkBytes) // 64 small buffers
	if st := g.l.Stats(); st.RegisteredBytes != small+chunk {
		t.Fatalf("after Connect: %d bytes registered, want %d (receive buffers + one 1 MiB chunk of small buffers)", st.RegisteredBytes, small+chunk)
	}
	release := heldRelease(t, g)
	sendReads(t, h, 100, 100)
	g.waitHeld(100)
	if st := g.l.Stats(); st.RegisteredBytes != small+2*chunk {
		t.Fatalf("100 4 KiB reads in flight: %d bytes registered, want %d (small buffers doubled once)", st.RegisteredBytes, small+2*chunk)
	}
	release()
	expectOK(t, g, h, 100)
	release = heldRelease(t, g)
	stride := uint64(q.dataStride)
	sendReadsOf(t, h, 8, 300, 64<<10)
	g.waitHeld(8)
	if st := g.l.Stats(); st.RegisteredBytes != small+2*chunk+8*stride {
		t.Fatalf("8 64 KiB reads in flight: %d bytes registered, want %d", st.RegisteredBytes, small+2*chunk+8*stride)
	}
	release()
	expectOK(t, g, h, 8)
	g.core.hold.Store(nil)
	// Nothing more is registered for commands that fit in what is there.
	sendReads(t, h, 64, 400)
	expectOK(t, g, h, 64)
	sendReadsOf(t, h, 8, 500, 64<<10)
	expectOK(t, g, h, 8)
	if st := g.l.Stats(); st.RegisteredBytes != small+2*chunk+8*stride {
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
	sendReadsOf(t, h, 8, 100, 64<<10)
	g.waitHeld(1) // the large pool's first buffer
	st := g.waitStats("growth denied", func(s Stats) bool { return s.GrowthDenied > 0 })
	q := g.queueByQID(1)
	if small := uint64(q.bootOff+bootSize) + uint64(q.smallGrowBase()*q.smallStride); st.RegisteredBytes != small+uint64(q.dataStride) {
		t.Fatalf("registered %d bytes past the cap", st.RegisteredBytes)
	}
	release()
	expectOK(t, g, h, 8)
}
