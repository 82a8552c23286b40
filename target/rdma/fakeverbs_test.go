package rdma

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// Fake verbs objects drive one queue's poller deterministically from a
// test: the test injects work completions and inspects posted work
// requests. They never allocate on the post/poll path.

type fakeDevice struct {
	attr verbs.DeviceAttr
	cqs  []*fakeCQ // in creation order: the queue's receive CQ, then its send CQ
}

func (d *fakeDevice) Name() string                             { return "fake0" }
func (d *fakeDevice) Attr() verbs.DeviceAttr                   { return d.attr }
func (d *fakeDevice) AllocPD() (verbs.ProtectionDomain, error) { return &fakePD{}, nil }
func (d *fakeDevice) CreateCQ(cqe, vector int) (verbs.CompletionQueue, error) {
	c := &fakeCQ{notify: make(chan struct{}, 1), ring: make([]verbs.WorkCompletion, 0, cqe)}
	d.cqs = append(d.cqs, c)
	return c, nil
}

type fakePD struct{}

func (p *fakePD) RegisterMemory(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	return &fakeMR{buf: buf, access: access}, nil
}
func (p *fakePD) Close() error { return nil }

type fakeMR struct {
	buf    []byte
	access verbs.Access
}

func (m *fakeMR) Buf() []byte          { return m.buf }
func (m *fakeMR) Addr() uint64         { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m.buf)))) }
func (m *fakeMR) LKey() uint32         { return 0x1234 }
func (m *fakeMR) RKey() uint32         { return 0x5678 }
func (m *fakeMR) Access() verbs.Access { return m.access }
func (m *fakeMR) Close() error         { return nil }

// fakeCQ returns injected completions.
type fakeCQ struct {
	mu     sync.Mutex
	ring   []verbs.WorkCompletion
	notify chan struct{}
	armed  int // ReqNotify calls
}

func (c *fakeCQ) inject(wc verbs.WorkCompletion) {
	c.mu.Lock()
	c.ring = append(c.ring, wc)
	c.mu.Unlock()
}

func (c *fakeCQ) Poll(wc []verbs.WorkCompletion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(wc, c.ring)
	c.ring = c.ring[:copy(c.ring, c.ring[n:])]
	return n, nil
}
func (c *fakeCQ) ReqNotify() error        { c.armed++; return nil }
func (c *fakeCQ) Notify() <-chan struct{} { return c.notify }
func (c *fakeCQ) Depth() int              { return cap(c.ring) }
func (c *fakeCQ) Close() error            { return nil }

// fakeQP records posted work requests (by value; SGLs are copied into a
// flat array so the test can inspect them after the batch array is reused).
type fakeQP struct {
	cap   verbs.QPCap
	sends []verbs.SendWR
	sges  []verbs.SGE
	recvs []uint64
	// order is every posted WR ID, receives and sends, in post order.
	order []uint64
	// failSend makes PostSend fail (QP in error).
	failSend bool
}

func (q *fakeQP) Num() uint32      { return 7 }
func (q *fakeQP) Cap() verbs.QPCap { return q.cap }
func (q *fakeQP) PostSend(wrs []verbs.SendWR) (int, error) {
	if q.failSend {
		return 0, verbs.ErrQPState
	}
	for _, wr := range wrs {
		q.sges = append(q.sges, wr.SGL[0])
		q.sends = append(q.sends, wr)
		q.order = append(q.order, wr.ID)
	}
	return len(wrs), nil
}
func (q *fakeQP) PostRecv(wrs []verbs.RecvWR) (int, error) {
	for _, wr := range wrs {
		q.recvs = append(q.recvs, wr.ID)
		q.order = append(q.order, wr.ID)
	}
	return len(wrs), nil
}
func (q *fakeQP) Close() error { return nil }

// reset forgets recorded posts, keeping capacity.
func (q *fakeQP) reset() {
	q.sends = q.sends[:0]
	q.sges = q.sges[:0]
	q.recvs = q.recvs[:0]
	q.order = q.order[:0]
}

type fakeConnID struct {
	dev  *fakeDevice
	qp   *fakeQP
	done chan struct{}
	once sync.Once
}

func (c *fakeConnID) Device() verbs.Device { return c.dev }
func (c *fakeConnID) CreateQP(pd verbs.ProtectionDomain, attr verbs.QPInitAttr) (verbs.QueuePair, error) {
	c.qp = &fakeQP{cap: attr.Cap, sends: make([]verbs.SendWR, 0, 1024), sges: make([]verbs.SGE, 0, 1024), recvs: make([]uint64, 0, 1024), order: make([]uint64, 0, 2048)}
	return c.qp, nil
}
func (c *fakeConnID) QP() verbs.QueuePair { return c.qp }
func (c *fakeConnID) Connect(ctx context.Context, p verbs.ConnParam) (verbs.ConnParam, error) {
	return verbs.ConnParam{}, verbs.ErrNotSupported
}
func (c *fakeConnID) Accept(ctx context.Context, p verbs.ConnParam) error { return nil }
func (c *fakeConnID) Reject(b []byte) error                               { return nil }
func (c *fakeConnID) Disconnect() error {
	c.once.Do(func() { close(c.done) })
	return nil
}
func (c *fakeConnID) Done() <-chan struct{} { return c.done }
func (c *fakeConnID) Err() error            { return nil }
func (c *fakeConnID) LocalAddr() string     { return "fake:1" }
func (c *fakeConnID) RemoteAddr() string    { return "fake:2" }
func (c *fakeConnID) Close() error          { return c.Disconnect() }

// fakeRig is one queue over fake verbs with a fake core, driven by the
// test goroutine (it plays the poller: no run goroutine is started).
type fakeRig struct {
	t    testing.TB
	l    *Listener
	q    *queue
	id   *fakeConnID
	rcq  *fakeCQ // receive completions
	scq  *fakeCQ // send-queue completions
	qp   *fakeQP
	core *fakeCore
	fq   *fakeQueue
}

// newFakeRig builds a queue with the given negotiated parameters.
func newFakeRig(t testing.TB, attr verbs.DeviceAttr, cfg Config, p queueParams) *fakeRig {
	t.Helper()
	core := newFakeCore(1 << 20)
	cfg.core = core
	cfg.Provider = nil
	if err := cfg.normalize(attr.MaxQPWR); err == nil {
		t.Fatal("normalize accepted a nil provider")
	}
	cfg.Provider = fakeProvider{}
	if err := cfg.normalize(attr.MaxQPWR); err != nil {
		t.Fatal(err)
	}
	cfg.Logger = slog.New(slog.DiscardHandler)
	l := &Listener{cfg: cfg, core: core, log: cfg.Logger, queues: map[*queue]struct{}{}}
	dev := &fakeDevice{attr: attr}
	id := &fakeConnID{dev: dev, done: make(chan struct{})}
	q, err := l.newQueue(id, dev, attr, p)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := core.NewQueue(0, q, p.depth)
	if err != nil {
		t.Fatal(err)
	}
	q.core = cq
	q.accepted = true
	cq.(*fakeQueue).qid = p.qid // as if connected
	if err := q.enableData(); err != nil {
		t.Fatal(err)
	}
	for q.dataBufs < p.depth { // these tests count on one buffer per entry
		if err := q.grow(false); err != nil {
			t.Fatal(err)
		}
	}
	for q.smallSize > 0 && q.smallBufs < p.depth { // in each pool
		if err := q.growSmall(false); err != nil {
			t.Fatal(err)
		}
	}
	return &fakeRig{t: t, l: l, q: q, id: id, rcq: dev.cqs[0], scq: dev.cqs[1], qp: id.qp, core: core, fq: cq.(*fakeQueue)}
}

// fakeProvider satisfies Config validation only.
type fakeProvider struct{}

func (fakeProvider) Name() string                     { return "fake" }
func (fakeProvider) Devices() ([]verbs.Device, error) { return nil, nil }
func (fakeProvider) Listen(string, verbs.ListenOptions) (verbs.Listener, error) {
	return nil, verbs.ErrNotSupported
}
func (fakeProvider) Resolve(context.Context, string, verbs.ResolveOptions) (verbs.ConnID, error) {
	return nil, verbs.ErrNotSupported
}

// deliver writes capsule into receive buffer ri and injects its completion.
func (g *fakeRig) deliver(ri int32, capsule []byte) {
	g.t.Helper()
	copy(g.q.sqeBuf(ri), capsule)
	if len(capsule) > nvme.SQESize {
		copy(g.q.icdBuf(ri), capsule[nvme.SQESize:])
	}
	g.rcq.inject(verbs.WorkCompletion{ID: wrID(wrRecv, ri), Opcode: verbs.WCRecv, ByteLen: uint32(len(capsule))})
}

// complete injects the successful completion of a posted send WR.
func (g *fakeRig) complete(wr verbs.SendWR) {
	op := verbs.WCSend
	if wr.Opcode == verbs.OpRDMARead {
		op = verbs.WCRDMARead
	}
	g.scq.inject(verbs.WorkCompletion{ID: wr.ID, Opcode: op})
}

// step runs one poller iteration.
func (g *fakeRig) step() { g.q.step() }

// sendsOf returns the posted send WRs with opcode op.
func (g *fakeRig) sendsOf(op verbs.Opcode) []verbs.SendWR {
	var out []verbs.SendWR
	for _, wr := range g.qp.sends {
		if wr.Opcode == op {
			out = append(out, wr)
		}
	}
	return out
}

// cqeOf reads the CQE a posted SEND carries.
func (g *fakeRig) cqeOf(wr verbs.SendWR) nvme.CQE {
	g.t.Helper()
	off := wr.SGL[0].Addr - g.q.small.Addr(0)
	c, ok := nvme.LoadCQE(g.q.mem[off : off+uint64(wr.SGL[0].Length)])
	if !ok {
		g.t.Fatal("short CQE")
	}
	return c
}

// onlyCQE expects exactly one posted SEND and returns its CQE.
func (g *fakeRig) onlyCQE() nvme.CQE {
	g.t.Helper()
	var sends []verbs.SendWR
	for _, wr := range g.qp.sends {
		if wr.Opcode == verbs.OpSend || wr.Opcode == verbs.OpSendWithInv {
			sends = append(sends, wr)
		}
	}
	if len(sends) != 1 {
		g.t.Fatalf("%d SENDs posted, want 1", len(sends))
	}
	return g.cqeOf(sends[0])
}

// memAt returns the registered bytes an SGE names.
func (g *fakeRig) memAt(s verbs.SGE) []byte {
	off := s.Addr - g.q.small.Addr(0)
	return g.q.mem[off : off+uint64(s.Length)]
}

// capsule builds a command capsule: the SQE and optional in-capsule bytes.
func capsule(sqe *nvme.SQE, icd []byte) []byte {
	b := make([]byte, nvme.SQESize+len(icd))
	copy(b, sqe[:])
	copy(b[nvme.SQESize:], icd)
	return b
}

// rwSQE builds a Read/Write with a keyed SGL (512-byte blocks).
func rwSQE(op uint8, cid uint16, slba uint64, nlb uint32, addr uint64, key uint32, subtype uint8) nvme.SQE {
	var s nvme.SQE
	s.SetRW(op, 1, slba, nlb, 0)
	s.SetCID(cid)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetKeyed(addr, nlb*512, key, subtype)
	return s
}

// freeData is the number of free data buffers of q, both pools.
func freeData(q *queue) int { return len(q.freeBufs) + len(q.freeSmall) }

// allData is the number of registered data buffers of q, both pools.
func allData(q *queue) int { return q.dataBufs + q.smallBufs }
