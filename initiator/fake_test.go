package initiator

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/internal/idmap"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// This file is a minimal in-memory stand-in for a verbs provider plus an
// NVMe I/O controller, enough to drive a qpair / IOQueue without a real
// target: PostSend completes synchronously, and the fake controller
// answers I/O commands against a byte slice "disk", moving data through
// the host's registered memory exactly as an RDMA target would (keyed SGL
// addresses resolved through the registered regions, access rights
// checked).

type fakeMR struct {
	mem    *fakeMem
	buf    []byte
	addr   uint64
	lkey   uint32
	rkey   uint32
	access verbs.Access
	closed bool
}

func (m *fakeMR) Buf() []byte          { return m.buf }
func (m *fakeMR) Addr() uint64         { return m.addr }
func (m *fakeMR) LKey() uint32         { return m.lkey }
func (m *fakeMR) RKey() uint32         { return m.rkey }
func (m *fakeMR) Access() verbs.Access { return m.access }
func (m *fakeMR) Close() error {
	m.mem.mu.Lock()
	defer m.mem.mu.Unlock()
	m.closed = true
	return nil
}

type fakeMem struct {
	mu      sync.Mutex
	regions []*fakeMR
	nextKey uint32
}

func (m *fakeMem) RegisterMemory(buf []byte, access verbs.Access) (verbs.MemoryRegion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextKey += 2
	mr := &fakeMR{mem: m, buf: buf, addr: uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))),
		lkey: m.nextKey, rkey: m.nextKey + 1, access: access}
	m.regions = append(m.regions, mr)
	return mr, nil
}

func (m *fakeMem) Close() error { return nil }

// lookup resolves [addr, addr+n) under key (an lkey for local access, an
// rkey with the need access right for remote access).
func (m *fakeMem) lookup(addr uint64, n int, key uint32, remote bool, need verbs.Access) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.regions {
		if r.closed {
			continue
		}
		if remote && (r.rkey != key || r.access&need != need) || !remote && r.lkey != key {
			continue
		}
		if addr < r.addr || addr+uint64(n) > r.addr+uint64(len(r.buf)) {
			return nil, false
		}
		o := addr - r.addr
		return r.buf[o : o+uint64(n)], true
	}
	return nil, false
}

type fakeCQ struct {
	mu     sync.Mutex
	q      []verbs.WorkCompletion
	armed  bool
	notify chan struct{}
	// detached (verbs.FDNotifier, fakecq_linux_test.go): an armed event
	// makes efd readable instead of sending on notify.
	detached bool
	efd      int
}

func newFakeCQ() *fakeCQ { return &fakeCQ{notify: make(chan struct{}, 1)} }

func (c *fakeCQ) Poll(wc []verbs.WorkCompletion) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := copy(wc, c.q)
	c.q = c.q[:copy(c.q, c.q[n:])]
	return n, nil
}

func (c *fakeCQ) ReqNotify() error {
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
	return nil
}

func (c *fakeCQ) Notify() <-chan struct{} { return c.notify }
func (c *fakeCQ) Depth() int              { return 1 << 20 }
func (c *fakeCQ) Close() error            { return nil }

func (c *fakeCQ) push(wc verbs.WorkCompletion) {
	c.mu.Lock()
	c.q = append(c.q, wc)
	armed := c.armed
	c.armed = false
	if armed && c.detached {
		c.signalFDLocked()
		armed = false
	}
	c.mu.Unlock()
	if armed {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
}

// fakeCmd is a command the fake controller received.
type fakeCmd struct {
	sqe     nvme.SQE
	capsule []byte // in-capsule data (copied)
	wrID    uint64
}

// fakeQP records posted work requests and, when auto is set, executes
// each command against disk and answers at once. In steady state its auto
// path does not allocate, so allocation tests measure only the initiator.
type fakeQP struct {
	t    testing.TB
	mem  *fakeMem
	cq   *fakeCQ
	bs   int
	disk []byte

	mu     sync.Mutex
	recvs  []fakeRecv    // posted receives, FIFO
	auto   bool          // execute and respond at once
	record bool          // keep every SQE in commands
	held   []fakeCmd     // commands received while !auto
	heldCh chan struct{} // if non-nil, signalled (non-blocking) per held command
	run    []fakeCmd     // scratch for the auto path
	sends  int           // SEND work requests posted
	posts  int           // PostSend calls

	commands []fakeCmd // every command received, when record

	// fabrics, when set, answers fabrics commands (Connect,
	// Authentication Send/Receive...) and every command of queue 0
	// (admin) instead of execute; the CID is set for it. Set before the
	// QP is used.
	fabrics func(q *fakeQP, cmd *fakeCmd) nvme.CQE
	qid     uint16 // for fabrics
}

type fakeRecv struct {
	id  uint64
	sge verbs.SGE
}

func (q *fakeQP) Num() uint32      { return 1 }
func (q *fakeQP) Cap() verbs.QPCap { return verbs.QPCap{} }
func (q *fakeQP) Close() error     { return nil }
func (q *fakeQP) setAuto(auto bool) {
	q.mu.Lock()
	q.auto = auto
	q.mu.Unlock()
}

func (q *fakeQP) PostRecv(wrs []verbs.RecvWR) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, w := range wrs {
		if len(w.SGL) != 1 || w.SGL[0].Length < nvme.CQESize {
			q.t.Errorf("receive WR with SGL %+v", w.SGL)
			return 0, verbs.ErrInvalid
		}
		q.recvs = append(q.recvs, fakeRecv{id: w.ID, sge: w.SGL[0]})
	}
	return len(wrs), nil
}

func (q *fakeQP) PostSend(wrs []verbs.SendWR) (int, error) {
	q.mu.Lock()
	q.posts++
	run := q.run[:0]
	for _, w := range wrs {
		q.sends++
		if len(w.SGL) == 0 || w.SGL[0].Length != nvme.SQESize || len(w.SGL) > 2 {
			q.mu.Unlock()
			q.t.Errorf("SEND SGL %+v: want a 64-byte SQE SGE and at most one data SGE", w.SGL)
			return 0, verbs.ErrInvalid
		}
		if w.Flags&verbs.SendInline != 0 {
			q.t.Errorf("inline send used")
		}
		b, ok := q.mem.lookup(w.SGL[0].Addr, nvme.SQESize, w.SGL[0].LKey, false, 0)
		if !ok {
			q.mu.Unlock()
			q.t.Errorf("SQE SGE not registered")
			return 0, verbs.ErrInvalid
		}
		cmd := fakeCmd{wrID: w.ID}
		copy(cmd.sqe[:], b)
		if len(w.SGL) == 2 {
			s := w.SGL[1]
			d, ok := q.mem.lookup(s.Addr, int(s.Length), s.LKey, false, 0)
			if !ok {
				q.mu.Unlock()
				q.t.Errorf("capsule SGE not registered")
				return 0, verbs.ErrInvalid
			}
			cmd.capsule = d
			if !q.auto || q.record {
				cmd.capsule = append([]byte(nil), d...)
			}
		}
		if q.record {
			q.commands = append(q.commands, cmd)
		}
		// The SEND itself completes (the target ACKed it).
		q.cq.push(verbs.WorkCompletion{ID: w.ID, Status: verbs.WCSuccess, Opcode: verbs.WCSend})
		if q.auto {
			run = append(run, cmd)
		} else {
			q.held = append(q.held, cmd)
			if q.heldCh != nil {
				select {
				case q.heldCh <- struct{}{}:
				default:
				}
			}
		}
	}
	q.run = run
	q.mu.Unlock()
	for i := range run {
		q.answer(run[i])
	}
	return len(wrs), nil
}

// answer executes cmd and sends its response.
func (q *fakeQP) answer(cmd fakeCmd) {
	if q.fabrics != nil && (cmd.sqe.Opcode() == nvme.OpFabrics || q.qid == 0) {
		q.answerFabrics(cmd)
		return
	}
	q.respond(cmd, q.execute(cmd))
}

// answerFabrics is answer's fabrics branch (apart, so that cmd escapes
// only here: the I/O path of the allocation tests stays allocation free).
func (q *fakeQP) answerFabrics(cmd fakeCmd) {
	cqe := q.fabrics(q, &cmd)
	cqe.SetCID(cmd.sqe.CID())
	q.sendCQE(cqe)
}

// release executes and answers every held command.
func (q *fakeQP) release() {
	q.mu.Lock()
	held := q.held
	q.held = nil
	q.mu.Unlock()
	for _, cmd := range held {
		q.answer(cmd)
	}
}

// heldCount is the number of commands waiting for release.
func (q *fakeQP) heldCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.held)
}

// respond sends a CQE for cmd with status st into the next posted receive.
func (q *fakeQP) respond(cmd fakeCmd, st nvme.Status) {
	var cqe nvme.CQE
	cqe.SetCID(cmd.sqe.CID())
	cqe.SetStatus(st)
	q.sendCQE(cqe)
}

// sendCQE delivers a raw response capsule.
func (q *fakeQP) sendCQE(cqe nvme.CQE) {
	q.mu.Lock()
	if len(q.recvs) == 0 {
		q.mu.Unlock()
		q.t.Errorf("response with no receive posted (host flow control broken)")
		return
	}
	r := q.recvs[0]
	q.recvs = q.recvs[:copy(q.recvs, q.recvs[1:])]
	q.mu.Unlock()
	b, ok := q.mem.lookup(r.sge.Addr, nvme.CQESize, r.sge.LKey, false, 0)
	if !ok {
		q.t.Errorf("receive buffer not registered")
		return
	}
	copy(b, cqe[:])
	q.cq.push(verbs.WorkCompletion{ID: r.id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv, ByteLen: nvme.CQESize})
}

// execute runs an I/O command against the disk.
func (q *fakeQP) execute(cmd fakeCmd) nvme.Status {
	e := &cmd.sqe
	if e.PSDT() != nvme.PSDTSGL {
		return nvme.StatusInvalidField
	}
	rw := nvme.RWCmd{SQE: e}
	sgl := e.SGL1()
	data := func(n int, need verbs.Access) ([]byte, nvme.Status) {
		if sgl.IsInCapsule() {
			off, l, ok := sgl.InCapsuleSpan(len(cmd.capsule))
			if !ok || l != n {
				return nil, nvme.StatusSGLOffsetInvalid
			}
			return cmd.capsule[off : off+l], 0
		}
		if !sgl.IsKeyed() || sgl.Subtype() != nvme.SGLSubtypeAddress {
			return nil, nvme.StatusSGLTypeInvalid
		}
		if int(sgl.Length()) != n {
			return nil, nvme.StatusDataSGLLengthInvalid
		}
		b, ok := q.mem.lookup(sgl.Address(), n, sgl.Key(), true, need)
		if !ok {
			return nil, nvme.StatusDataTransferError
		}
		return b, 0
	}
	span := func() (int, int, nvme.Status) {
		off := int(rw.SLBA()) * q.bs
		n := int(rw.NLB()) * q.bs
		if off+n > len(q.disk) {
			return 0, 0, nvme.StatusLBAOutOfRange
		}
		return off, n, 0
	}
	switch e.Opcode() {
	case nvme.IORead:
		off, n, st := span()
		if st != 0 {
			return st
		}
		b, st := data(n, verbs.AccessRemoteWrite)
		if st != 0 {
			return st
		}
		copy(b, q.disk[off:off+n])
	case nvme.IOWrite:
		off, n, st := span()
		if st != 0 {
			return st
		}
		b, st := data(n, verbs.AccessRemoteRead)
		if st != 0 {
			return st
		}
		copy(q.disk[off:off+n], b)
	case nvme.IOWriteZeroes:
		off, n, st := span()
		if st != 0 {
			return st
		}
		clear(q.disk[off : off+n])
	case nvme.IODatasetMgmt:
		nr := int(e.CDW10()&0xFF) + 1
		b, st := data(nr*nvme.DSMRangeSize, verbs.AccessRemoteRead)
		if st != 0 {
			return st
		}
		for i := 0; i < nr; i++ {
			r, _ := nvme.ParseDSMRange(b, i)
			off, n := int(r.SLBA)*q.bs, int(r.NLB)*q.bs
			if off+n > len(q.disk) {
				return nvme.StatusLBAOutOfRange
			}
			clear(q.disk[off : off+n])
		}
	case nvme.IOFlush:
	default:
		return nvme.StatusInvalidOpcode
	}
	return 0
}

// fakeRig is a controller with I/O queues over the fake verbs.
type fakeRig struct {
	c   *Controller
	ioq *IOQueue // the first queue
	qp  *fakeQP  // the first queue's fake QP
	qps []*fakeQP
	ns  *Namespace
}

const fakeNSID = 1

// newFakeRig builds a Controller with one I/O queue of the given depth on
// the fake verbs, a namespace of blocks blocks of bs bytes, and the given
// MaxTransfer and in-capsule size. The fake controller answers at once.
func newFakeRig(t testing.TB, depth, bs, blocks, maxTransfer, inCapsule int) *fakeRig {
	return newFakeRigN(t, 1, depth, bs, blocks, maxTransfer, inCapsule)
}

// newFakeRigN is newFakeRig with nq I/O queues sharing one disk.
func newFakeRigN(t testing.TB, nq, depth, bs, blocks, maxTransfer, inCapsule int) *fakeRig {
	t.Helper()
	mem := &fakeMem{}
	disk := make([]byte, bs*blocks)
	c := newController("fake:4420", "nqn.2026-01.io.rdmablk:test", Options{Provider: nil}.withDefaults())
	c.pd = mem
	c.ident.ONCS = nvme.ONCSWriteZeroes | nvme.ONCSDSM
	c.cc = nvme.CCEN
	c.maxTransfer = maxTransfer
	c.inCapsule = inCapsule
	r := &fakeRig{c: c}
	for k := 0; k < nq; k++ {
		cq := newFakeCQ()
		fqp := &fakeQP{t: t, mem: mem, cq: cq, bs: bs, disk: disk, auto: true}
		q := newFakeQpair(t, mem, fqp, cq, uint16(k+1), depth, inCapsule)
		ioq, err := newIOQueue(c, k, q, maxTransfer, inCapsule, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.queues = append(c.queues, ioq)
		c.conns.Lock()
		c.qpairs = append(c.qpairs, q)
		c.conns.Unlock()
		r.qps = append(r.qps, fqp)
	}
	r.ioq, r.qp = c.queues[0], r.qps[0]
	ns := &Namespace{c: c, nsid: fakeNSID}
	info := nvme.IdentifyNamespace{NSZE: uint64(blocks), NCAP: uint64(blocks)}
	info.LBAF[0].LBADS = uint8(log2(bs))
	ns.info.Store(&info)
	m := map[uint32]*Namespace{fakeNSID: ns}
	c.nsByID.Store(idmap.New(m))
	r.ns = ns
	c.startMuxes()
	t.Cleanup(func() { _ = c.Close() })
	return r
}

func log2(n int) int {
	k := 0
	for 1<<k < n {
		k++
	}
	return k
}

// newFakeQpair builds an RDMA qpair (rdmaWire) on the fake verbs with
// every receive posted, as dialQueue leaves it after the CM connect.
func newFakeQpair(t testing.TB, mem *fakeMem, fqp *fakeQP, cq *fakeCQ, qid uint16, depth, inCapsule int) *qpair {
	t.Helper()
	q := &qpair{qid: qid}
	w := &rdmaWire{q: q, qp: fqp, cq: cq, inCapsule: inCapsule}
	q.w = w
	if err := w.init(mem, depth); err != nil {
		t.Fatal(err)
	}
	if err := w.postAllRecvs(); err != nil {
		t.Fatal(err)
	}
	return q
}
