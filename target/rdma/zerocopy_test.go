package rdma

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	nullbd "github.com/rdmablk/rdmablk/blockdev/null"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
)

// bufSpan is the address and length of one buffer.
type bufSpan struct {
	addr uint64
	n    int
}

func spanOf(p []byte) bufSpan {
	return bufSpan{addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(p)))), n: len(p)}
}

// spyBackend records the buffers the target core hands to the backend.
// It keeps the wrapped backend's NonBlocking answer, so a null backend
// still runs inline on the poller and a file backend on the workers.
type spyBackend struct {
	blockdev.Backend
	mu     sync.Mutex
	reads  [][]bufSpan
	writes [][]bufSpan
}

func spans(bufs [][]byte) []bufSpan {
	out := make([]bufSpan, len(bufs))
	for i, p := range bufs {
		out[i] = spanOf(p)
	}
	return out
}

func (s *spyBackend) ReadAt(bufs [][]byte, lba uint64) error {
	s.mu.Lock()
	s.reads = append(s.reads, spans(bufs))
	s.mu.Unlock()
	return s.Backend.ReadAt(bufs, lba)
}

func (s *spyBackend) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	s.mu.Lock()
	s.writes = append(s.writes, spans(bufs))
	s.mu.Unlock()
	return s.Backend.WriteAt(bufs, lba, f)
}

// spyAsync is a spyBackend over a backend with an asynchronous path
// (file: io_uring), which it keeps visible to the core.
type spyAsync struct {
	*spyBackend
	async blockdev.Async
}

func (s spyAsync) SubmitRead(buf []byte, lba uint64, c blockdev.Completion) bool {
	s.mu.Lock()
	s.reads = append(s.reads, spans([][]byte{buf}))
	s.mu.Unlock()
	if s.async.SubmitRead(buf, lba, c) {
		return true
	}
	s.mu.Lock()
	s.reads = s.reads[:len(s.reads)-1] // the core falls back to ReadAt
	s.mu.Unlock()
	return false
}

func (s spyAsync) SubmitWrite(buf []byte, lba uint64, f blockdev.WriteFlags, c blockdev.Completion) bool {
	s.mu.Lock()
	s.writes = append(s.writes, spans([][]byte{buf}))
	s.mu.Unlock()
	if s.async.SubmitWrite(buf, lba, f, c) {
		return true
	}
	s.mu.Lock()
	s.writes = s.writes[:len(s.writes)-1]
	s.mu.Unlock()
	return false
}

func (s *spyBackend) NonBlocking() bool {
	nb, ok := s.Backend.(blockdev.NonBlocking)
	return ok && nb.NonBlocking()
}

type postedData struct {
	op   verbs.Opcode
	addr uint64
	n    uint32
}

// TestZeroCopy proves the data path copies nothing, for a null and a
// file backend: the buffer the backend reads into is the buffer the RDMA
// WRITE to the host sends from, the buffer an RDMA READ from the host
// lands in is the buffer the backend writes from, in-capsule data is
// written from the receive buffer it arrived in, and all of them lie in
// the queue's registered memory (so the file backend's O_DIRECT transfer
// goes straight between the file and registered memory).
func TestZeroCopy(t *testing.T) {
	for _, kind := range []string{"null", "file", "file-workers"} {
		t.Run(kind, func(t *testing.T) { testZeroCopy(t, kind) })
	}
}

func testZeroCopy(t *testing.T, kind string) {
	var inner blockdev.Backend
	var fb *file.Backend
	switch kind {
	case "null":
		inner = nullbd.New(32768, 512)
	case "file", "file-workers":
		ring := 0 // io_uring fast path when the host has it
		if kind == "file-workers" {
			ring = -1 // blocking path on the worker pool
		}
		var err error
		fb, err = file.Open(filepath.Join(t.TempDir(), "vol.img"), file.Options{Size: 16 << 20, BlockSize: 512, RingEntries: ring})
		if err != nil {
			t.Fatal(err)
		}
		inner = fb
	}
	spy := &spyBackend{Backend: inner}
	var be blockdev.Backend = spy
	if a, ok := inner.(blockdev.Async); ok {
		be = spyAsync{spy, a}
	}
	tgt := target.New(target.Options{Logger: slog.New(slog.DiscardHandler)})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testSubNQN, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tgt.Close(); err != nil {
			t.Errorf("target Close: %v", err)
		}
		_ = inner.Close()
	})

	var mu sync.Mutex
	var posted []postedData
	hooks := &testHooks{dataPosted: func(op verbs.Opcode, addr uint64, n uint32) {
		mu.Lock()
		posted = append(posted, postedData{op, addr, n})
		mu.Unlock()
	}}
	g := newRig(t, rigOpts{realCore: true, hooks: hooks, cfg: Config{Target: tgt, PortID: 1}})
	const size = 128 << 10
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: 8, dataSize: 2 * size})

	q := g.queueByQID(1)
	memLo := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(q.mem))))
	memHi := memLo + uint64(len(q.mem))
	inMR := func(b bufSpan) bool { return b.addr >= memLo && b.addr+uint64(b.n) <= memHi }

	pattern := make([]byte, size)
	for i := range pattern {
		pattern[i] = byte(i*7 + i>>9)
	}
	copy(io.data()[:size], pattern)

	// 128 KiB host write: keyed SGL → RDMA READ → backend WriteAt.
	w := io.ioSQE(nvme.IOWrite, 10, 0, size, 0, 0)
	io.mustOK(g.ctx, &w, nil)
	// 4 KiB host write with in-capsule data → backend WriteAt from the
	// receive buffer.
	var ic nvme.SQE
	ic.SetRW(nvme.IOWrite, 1, size/512, 4096/512, 0)
	ic.SetCID(11)
	ic.SetPSDT(nvme.PSDTSGL)
	ic.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	if rsp, err := io.do(g.ctx, &ic, pattern[:4096]); err != nil || !rsp.cqe.Status().OK() {
		t.Fatalf("in-capsule write: %v %v", err, rsp.cqe.Status())
	}
	// 128 KiB host read: backend ReadAt → RDMA WRITE.
	r := io.ioSQE(nvme.IORead, 12, 0, size, size, 0)
	io.mustOK(g.ctx, &r, nil)

	spy.mu.Lock()
	reads, writes := spy.reads, spy.writes
	spy.mu.Unlock()
	mu.Lock()
	got := append([]postedData(nil), posted...)
	mu.Unlock()
	if len(writes) != 2 || len(reads) != 1 {
		t.Fatalf("backend saw %d writes, %d reads; want 2, 1", len(writes), len(reads))
	}
	var rdmaRead, rdmaWrite *postedData
	for i := range got {
		if got[i].n != size {
			continue // the admin queue's keyed Connect data
		}
		switch got[i].op {
		case verbs.OpRDMARead:
			rdmaRead = &got[i]
		case verbs.OpRDMAWrite:
			rdmaWrite = &got[i]
		}
	}
	if rdmaRead == nil || rdmaWrite == nil {
		t.Fatalf("data work requests posted: %+v", got)
	}
	// Host write: one buffer, the RDMA READ's target, in registered memory.
	if len(writes[0]) != 1 || writes[0][0] != (bufSpan{rdmaRead.addr, int(rdmaRead.n)}) || !inMR(writes[0][0]) {
		t.Errorf("WriteAt buffer %+v, RDMA READ landed in %#x+%d, registered memory [%#x,%#x)",
			writes[0], rdmaRead.addr, rdmaRead.n, memLo, memHi)
	}
	// In-capsule write: from the receive buffer area of the registered memory.
	recvLo := memLo
	recvHi := memLo + uint64(q.cqeOff)
	if b := writes[1]; len(b) != 1 || b[0].n != 4096 || b[0].addr < recvLo || b[0].addr+4096 > recvHi || b[0].addr%dataAlign != 0 {
		t.Errorf("in-capsule WriteAt buffer %+v, receive buffers [%#x,%#x), want %d-byte aligned", b, recvLo, recvHi, dataAlign)
	}
	// Host read: the backend filled the buffer the RDMA WRITE sent.
	if len(reads[0]) != 1 || reads[0][0] != (bufSpan{rdmaWrite.addr, int(rdmaWrite.n)}) || !inMR(reads[0][0]) {
		t.Errorf("ReadAt buffer %+v, RDMA WRITE sent %#x+%d, registered memory [%#x,%#x)",
			reads[0], rdmaWrite.addr, rdmaWrite.n, memLo, memHi)
	}
	back := io.data()[size : 2*size]
	switch kind {
	case "file", "file-workers":
		if !bytes.Equal(back, pattern) {
			t.Error("data read back differs from the data written")
		}
		st := fb.Stats()
		switch {
		case st.DirectIOs == 0:
			// The test's filesystem refuses O_DIRECT (e.g. old tmpfs).
			t.Logf("file stats %+v: no O_DIRECT on this filesystem", st)
		case st.DirectIOs != 3 || st.BufferedIOs != 0:
			t.Errorf("file stats %+v: every transfer should go O_DIRECT", st)
		case kind == "file" && st.AsyncIOs != 3:
			t.Logf("file stats %+v: io_uring fast path not used on this host", st)
		case kind == "file-workers" && st.AsyncIOs != 0:
			t.Errorf("file stats %+v: io_uring used with RingEntries -1", st)
		}
	case "null":
		if !bytes.Equal(back, make([]byte, size)) {
			t.Error("null backend read returned non-zero bytes")
		}
	}
	runtime.KeepAlive(q)
}

// queueByQID returns the listener's connected queue with that qid.
func (g *rig) queueByQID(qid uint16) *queue {
	g.t.Helper()
	g.l.mu.Lock()
	defer g.l.mu.Unlock()
	for q := range g.l.queues {
		if q.params.qid == qid {
			return q
		}
	}
	g.t.Fatalf("no queue with qid %d", qid)
	return nil
}

// TestSeveralMemoryRegions: with memory regions limited to 3 data buffers
// (as 1 GiB limits a queue whose buffers exceed it), a queue registers
// several regions, no buffer straddles two, and data moves correctly
// through buffers in every region.
func TestSeveralMemoryRegions(t *testing.T) {
	tgt := newRealTarget(t, false)
	const size = 128 << 10
	g := newRig(t, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1, MaxDataTransfer: size, mrChunk: 3 * size}})
	const depth = 8
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: depth, dataSize: 2 * depth * size})
	q := g.queueByQID(1)
	if n := q.small.Regions(); n != 1 {
		t.Fatalf("receive and CQE buffers in %d memory regions, want 1", n)
	}
	src := io.data()[:depth*size]
	for i := range src {
		src[i] = byte(i*13 + i>>17)
	}
	// All commands in flight at once, so every data buffer is used.
	for i := range depth {
		w := io.ioSQE(nvme.IOWrite, uint16(10+i), uint64(i*size), size, i*size, 0)
		if err := io.send(capsule(&w, nil)); err != nil {
			t.Fatal(err)
		}
	}
	for range depth {
		if rsp, err := io.response(g.ctx); err != nil || !rsp.cqe.Status().OK() {
			t.Fatalf("write: %v %v", err, rsp.cqe.Status())
		}
	}
	for i := range depth {
		r := io.ioSQE(nvme.IORead, uint16(30+i), uint64(i*size), size, (depth+i)*size, 0)
		if err := io.send(capsule(&r, nil)); err != nil {
			t.Fatal(err)
		}
	}
	for range depth {
		if rsp, err := io.response(g.ctx); err != nil || !rsp.cqe.Status().OK() {
			t.Fatalf("read: %v %v", err, rsp.cqe.Status())
		}
	}
	if !bytes.Equal(io.data()[depth*size:2*depth*size], src) {
		t.Fatal("data read back differs")
	}
	// The large pool's first chunk (all 8 buffers, 1 MiB) came with the
	// first write, in regions of at most 3 buffers.
	regions := 0
	q.l.groups[0].inspect(func([]*queue) {
		for _, c := range q.chunks {
			regions += c.Regions()
		}
	})
	if regions < 4 { // 1 for the small buffers' chunk, 3 for the large
		t.Fatalf("%d memory regions, want several", regions)
	}
}
