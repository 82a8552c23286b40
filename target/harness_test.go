package target

import (
	"encoding/binary"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// safety is the deadline for waiting on channels: a safety net only; the
// tests synchronise on channels, never on elapsed time.
const safety = 10 * time.Second

const (
	testSubNQN  = "nqn.2024-01.io.rdmablk:sub1"
	testSubNQN2 = "nqn.2024-01.io.rdmablk:sub2"
	testHostNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
	otherHost   = "nqn.2014-08.org.nvmexpress:uuid:99999999-2222-3333-4444-555555555555"
	testPortID  = 1
	testDepth   = 128
	testICD     = 4096
	testMaxXfer = 1 << 20
)

var testHostID = [16]byte{0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff, 0x01}

// fakeConn is a QueueConn recording asynchronous completions and Close.
type fakeConn struct {
	completed chan *Request
	closed    chan struct{}
	once      sync.Once
	nclose    atomic.Int32
}

func newFakeConn() *fakeConn {
	return &fakeConn{completed: make(chan *Request, 1024), closed: make(chan struct{})}
}

func (f *fakeConn) Complete(r *Request) { f.completed <- r }

func (f *fakeConn) Close() {
	f.nclose.Add(1)
	f.once.Do(func() { close(f.closed) })
}

// waitClosed waits until Close was called.
func (f *fakeConn) waitClosed(t testing.TB) {
	t.Helper()
	select {
	case <-f.closed:
	case <-time.After(safety):
		t.Fatal("QueueConn.Close not called")
	}
}

// isClosed reports whether Close was called.
func (f *fakeConn) isClosed() bool {
	select {
	case <-f.closed:
		return true
	default:
		return false
	}
}

// testPort is an RDMA-like port.
func testPort(id uint16, addr string) Port {
	return Port{
		ID:      id,
		TrType:  nvme.TrTypeRDMA,
		AdrFam:  nvme.AdrFamIPv4,
		TrAddr:  addr,
		TrSvcID: "4420",
		TSAS:    nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0),
		Caps: TransportCaps{
			TrType:            nvme.TrTypeRDMA,
			KeyedSGL:          true,
			InCapsuleDataSize: testICD,
			MaxDataTransfer:   testMaxXfer,
			MaxQueueDepth:     testDepth,
			MaxSGLDescriptors: 1,
		},
	}
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newTestTarget returns a target with one port; closed at cleanup.
func newTestTarget(t testing.TB, opts Options) *Target {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.Workers == 0 {
		opts.Workers = 4
	}
	tg := New(opts)
	t.Cleanup(func() { tg.Close() })
	if err := tg.AddPort(testPort(testPortID, "192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	return tg
}

// host drives one queue like a transport would.
type host struct {
	t    testing.TB
	tg   *Target
	q    *Queue
	conn *fakeConn
	cid  uint16
}

func newHost(t testing.TB, tg *Target, depth int) *host {
	t.Helper()
	conn := newFakeConn()
	q, err := tg.NewQueue(testPortID, conn, depth)
	if err != nil {
		t.Fatal(err)
	}
	return &host{t: t, tg: tg, q: q, conn: conn}
}

// direction is what a transport derives from the opcode (fabrics: FCTYPE).
func direction(s *nvme.SQE) nvme.DataDirection {
	if s.IsFabrics() {
		return nvme.OpcodeDirection(s.FCType())
	}
	return nvme.OpcodeDirection(s.Opcode())
}

// submit executes sqe with data and returns the request and whether
// Execute completed it synchronously.
func (h *host) submit(sqe nvme.SQE, data []byte) (*Request, bool) {
	h.cid++
	r := &Request{SQE: sqe, Data: data, Length: uint32(len(data))}
	r.SQE.SetCID(h.cid)
	r.Dir = direction(&r.SQE)
	if len(data) == 0 {
		r.SQE.SGL1().SetNull()
	} else {
		r.SQE.SGL1().SetKeyed(0x1000, uint32(len(data)), 0x1234, nvme.SGLSubtypeAddress)
	}
	return r, h.q.Execute(r)
}

// do executes sqe and waits for its completion (inline or asynchronous).
func (h *host) do(sqe nvme.SQE, data []byte) *Request {
	h.t.Helper()
	r, done := h.submit(sqe, data)
	if !done {
		h.wait(r)
	}
	if r.CQE.CID() != h.cid {
		h.t.Fatalf("CQE CID %d, want %d", r.CQE.CID(), h.cid)
	}
	return r
}

// wait waits for the asynchronous completion of r.
func (h *host) wait(r *Request) {
	h.t.Helper()
	select {
	case got := <-h.conn.completed:
		if got != r {
			h.t.Fatalf("completed request CID %d, want CID %d", got.SQE.CID(), r.SQE.CID())
		}
	case <-time.After(safety):
		h.t.Fatalf("request CID %d never completed", r.SQE.CID())
	}
}

// expect executes sqe and checks the status.
func (h *host) expect(sqe nvme.SQE, data []byte, want nvme.Status) *Request {
	h.t.Helper()
	r := h.do(sqe, data)
	if got := r.Status(); got != want {
		h.t.Fatalf("opcode %#x: status %v, want %v", sqe.Opcode(), got, want)
	}
	return r
}

// connectData builds Connect data.
func connectData(sub, hostNQN string, cntlid uint16, hostID [16]byte) []byte {
	b := make([]byte, nvme.ConnectDataSize)
	d := nvme.ConnectData{HostID: hostID, CNTLID: cntlid, SubNQN: sub, HostNQN: hostNQN}
	if err := d.Marshal(b); err != nil {
		panic(err)
	}
	return b
}

// connect sends a Connect for qid and returns the request.
func (h *host) connect(qid, sqsize uint16, kato uint32, sub, hostNQN string, cntlid uint16) *Request {
	var s nvme.SQE
	s.SetConnect(qid, sqsize, 0, kato)
	return h.do(s, connectData(sub, hostNQN, cntlid, testHostID))
}

// connectAdmin connects an admin queue and returns the controller ID.
func (h *host) connectAdmin(sub, hostNQN string, kato uint32) uint16 {
	h.t.Helper()
	r := h.connect(0, 31, kato, sub, hostNQN, nvme.DynamicCNTLID)
	if !r.Status().OK() {
		h.t.Fatalf("admin connect: %v", r.Status())
	}
	return uint16(r.CQE.DW0())
}

// propGet reads a property.
func (h *host) propGet(off uint32, size8 bool) uint64 {
	h.t.Helper()
	var s nvme.SQE
	s.SetPropertyGet(off, size8)
	return h.expect(s, nil, nvme.StatusSuccess).CQE.Result64()
}

// propSet writes a property.
func (h *host) propSet(off uint32, v uint64) *Request {
	var s nvme.SQE
	s.SetPropertySet(off, false, v)
	return h.do(s, nil)
}

// ccEnable is the CC value the Linux host writes.
const ccEnable = nvme.CCEN | 6<<nvme.CCIOSQESShift | 4<<nvme.CCIOCQESShift

// enable sets CC.EN.
func (h *host) enable() {
	h.t.Helper()
	if st := h.propSet(nvme.PropCC, ccEnable).Status(); !st.OK() {
		h.t.Fatalf("set CC: %v", st)
	}
}

// identify issues Identify and returns the data.
func (h *host) identify(cns uint8, nsid uint32, want nvme.Status) []byte {
	h.t.Helper()
	var s nvme.SQE
	s.SetIdentify(cns, nsid)
	b := make([]byte, nvme.IdentifySize)
	h.expect(s, b, want)
	return b
}

// getLog reads n bytes of log lid at offset.
func (h *host) getLog(lid uint8, n uint32, off uint64, rae bool, want nvme.Status) []byte {
	h.t.Helper()
	var s nvme.SQE
	s.SetGetLogPage(lid, nsidBroadcast, n, off)
	nvme.GetLogPageCmd{SQE: &s}.SetRAE(rae)
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xEE // must be overwritten
	}
	h.expect(s, b, want)
	return b
}

// setFeature sets a feature and returns DW0.
func (h *host) setFeature(fid uint8, v uint32, want nvme.Status) uint32 {
	h.t.Helper()
	var s nvme.SQE
	s.SetSetFeatures(fid, v)
	return h.expect(s, nil, want).CQE.DW0()
}

// getFeature gets a feature and returns DW0.
func (h *host) getFeature(fid uint8, want nvme.Status) uint32 {
	h.t.Helper()
	var s nvme.SQE
	s.SetGetFeatures(fid, 0)
	return h.expect(s, nil, want).CQE.DW0()
}

// rw builds a Read/Write/Write Zeroes SQE.
func rw(op uint8, nsid uint32, slba uint64, nlb uint32, flags uint32) nvme.SQE {
	var s nvme.SQE
	s.SetRW(op, nsid, slba, nlb, flags)
	return s
}

// ioSetup is a connected, enabled controller with one I/O queue.
type ioSetup struct {
	tg     *Target
	sub    *Subsystem
	admin  *host
	io     *host
	cntlid uint16
}

// newIOSetup builds a target with a subsystem holding the given
// namespaces, connects and enables a controller, grants 4 I/O queues and
// connects I/O queue 1.
func newIOSetup(t testing.TB, opts Options, ns ...NamespaceConfig) *ioSetup {
	t.Helper()
	tg := newTestTarget(t, opts)
	sub, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Serial: "SN0001", Model: "test model",
		Hosts: []string{testHostNQN}, Namespaces: ns})
	if err != nil {
		t.Fatal(err)
	}
	s := &ioSetup{tg: tg, sub: sub, admin: newHost(t, tg, 32)}
	s.cntlid = s.admin.connectAdmin(testSubNQN, testHostNQN, 0)
	s.admin.enable()
	s.admin.setFeature(nvme.FeatNumQueues, nvme.NumQueuesValue(4, 4), nvme.StatusSuccess)
	s.io = newHost(t, tg, testDepth)
	if r := s.io.connect(1, testDepth-1, 0, testSubNQN, testHostNQN, s.cntlid); !r.Status().OK() {
		t.Fatalf("I/O connect: %v", r.Status())
	}
	return s
}

// memNS is a namespace on a fresh mem backend.
func memNS(nsid uint32, blocks uint64, bs int) NamespaceConfig {
	return NamespaceConfig{NSID: nsid, Backend: mem.New(blocks, bs)}
}

// countingBackend counts Flush calls and can hide NonBlocking (so the
// target uses its worker pool) and hold reads until released.
type countingBackend struct {
	blockdev.Backend
	flushes atomic.Int32
	// hold, when non-nil, makes ReadAt signal entered and wait for it.
	hold    chan struct{}
	entered chan struct{}
	// readDone is set just before a held ReadAt returns.
	readDone atomic.Bool
}

func (b *countingBackend) Flush() error {
	b.flushes.Add(1)
	return b.Backend.Flush()
}

func (b *countingBackend) ReadAt(bufs [][]byte, lba uint64) error {
	if b.hold != nil {
		b.entered <- struct{}{}
		<-b.hold
		defer b.readDone.Store(true)
	}
	return b.Backend.ReadAt(bufs, lba)
}

// inlineBackend is countingBackend that may run inline.
type inlineBackend struct{ *countingBackend }

func (inlineBackend) NonBlocking() bool { return true }

// dsmData encodes DSM ranges.
func dsmData(rs ...nvme.DSMRange) []byte {
	b := make([]byte, len(rs)*nvme.DSMRangeSize)
	for i, r := range rs {
		nvme.PutDSMRange(b, i, r)
	}
	return b
}

func le32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[4*i:]) }
