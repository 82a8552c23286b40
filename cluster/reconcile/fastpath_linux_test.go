package reconcile

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

const (
	fpNode = "n1"
	fpNQN  = "nqn.2026-11.io.rdmablk:fastpath"
	fpHost = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
)

// staticCatalog serves one fixed State.
type staticCatalog struct{ st *catalog.State }

func (c staticCatalog) View(fn func(st *catalog.State)) { fn(c.st) }
func (c staticCatalog) Watch() (<-chan struct{}, func()) {
	return make(chan struct{}), func() {}
}

// nopProposer accepts every command.
type nopProposer struct{}

func (nopProposer) Propose(context.Context, catalog.Command) (catalog.Result, error) {
	return catalog.Result{}, nil
}

// growable gives a file backend the blockdev.Resizer capability for as
// long as blockdev/file does not have it itself (the volume handle only
// unwraps backends that resize in place). Its promoted methods keep the
// backend's Async and FixedBuffers, as the real one does.
type growable struct{ *file.Backend }

func (growable) Resize(uint64) error { return blockdev.ErrOutOfRange }

// chanConn is a target.QueueConn delivering asynchronous completions.
type chanConn struct{ done chan *target.Request }

func (c *chanConn) Complete(r *target.Request) { c.done <- r }
func (c *chanConn) Close()                     {}

// rawQueue drives one core queue as a transport would.
type rawQueue struct {
	t    *testing.T
	q    *target.Queue
	conn *chanConn
	cid  uint16
}

func newRawQueue(t *testing.T, tg *target.Target, region []byte) *rawQueue {
	conn := &chanConn{done: make(chan *target.Request, 4)}
	q, err := tg.NewQueue(1, conn, 32)
	if err != nil {
		t.Fatal(err)
	}
	if region != nil {
		q.SetDataRegion(region)
	}
	t.Cleanup(q.Destroy)
	return &rawQueue{t: t, q: q, conn: conn}
}

func (rq *rawQueue) do(sqe nvme.SQE, dir nvme.DataDirection, data []byte) *target.Request {
	rq.t.Helper()
	rq.cid++
	r := &target.Request{SQE: sqe, Dir: dir, Data: data, Length: uint32(len(data))}
	r.SQE.SetCID(rq.cid)
	r.SQE.SetPSDT(nvme.PSDTSGL)
	if !rq.q.Execute(r) {
		select {
		case got := <-rq.conn.done:
			if got != r {
				rq.t.Fatal("completion of another request")
			}
		case <-time.After(10 * time.Second):
			rq.t.Fatal("request never completed")
		}
	}
	if st := r.Status(); !st.OK() {
		rq.t.Fatalf("opcode %#x: %v", sqe.Opcode(), st)
	}
	return r
}

func (rq *rawQueue) connect(qid uint16, cntlid uint16) uint16 {
	var s nvme.SQE
	s.SetConnect(qid, 31, 0, 0)
	b := make([]byte, nvme.ConnectDataSize)
	d := nvme.ConnectData{CNTLID: cntlid, SubNQN: fpNQN, HostNQN: fpHost}
	if err := d.Marshal(b); err != nil {
		rq.t.Fatal(err)
	}
	return uint16(rq.do(s, nvme.DirHostToCtrl, b).CQE.DW0())
}

// TestClusterVolumeKeepsFastPath: a file volume served by the reconciler
// runs its reads and writes on the file backend's io_uring path with the
// transport's memory as fixed buffers (it used to go through a wrapper
// that hid both), and the volume's metrics still count every I/O.
func TestClusterVolumeKeepsFastPath(t *testing.T) {
	dir := t.TempDir()
	st := catalog.New()
	st.Volumes["vol"] = catalog.Volume{Name: "vol", Size: 4 << 20, BlockSize: 4096, Path: "vol.img",
		Node: fpNode, State: catalog.VolumeOnline,
		UUID: "0123456789abcdef0123456789abcdef", NGUID: "fedcba9876543210fedcba9876543210"}
	st.Subsystems[fpNQN] = catalog.Subsystem{NQN: fpNQN, Node: fpNode, AllowAnyHost: true,
		Namespaces: map[uint32]string{1: "vol"}}

	tg := target.New(target.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := tg.AddPort(target.Port{ID: 1, TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4,
		TrAddr: "127.0.0.1", TrSvcID: "4420",
		Caps: target.TransportCaps{MaxDataTransfer: 1 << 20, MaxQueueDepth: 128, MaxSGLDescriptors: 1}}); err != nil {
		t.Fatal(err)
	}
	var fb *file.Backend
	m := metrics.New()
	rec := New(Options{
		NodeID: fpNode, VolumeDir: dir, Target: tg, Catalog: staticCatalog{st}, Proposer: nopProposer{},
		Metrics: m, Logger: slog.New(slog.DiscardHandler),
		Open: func(path string, size int64, bs int) (blockdev.Backend, error) {
			b, err := file.Open(path, file.Options{Size: size, BlockSize: bs})
			if err != nil {
				return nil, err
			}
			fb = b
			var be blockdev.Backend = b
			if _, ok := be.(blockdev.Resizer); !ok {
				be = growable{b}
			}
			return be, nil
		},
	})
	if err := rec.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tg.Close()
		rec.Close()
	})
	if fb == nil {
		t.Fatal("volume not opened")
	}

	admin := newRawQueue(t, tg, nil)
	cntlid := admin.connect(0, nvme.DynamicCNTLID)
	var cc nvme.SQE
	cc.SetPropertySet(nvme.PropCC, false, nvme.CCEN|6<<nvme.CCIOSQESShift|4<<nvme.CCIOCQESShift)
	admin.do(cc, nvme.DirNone, nil)

	// The transport's data region (page aligned, as registered memory
	// is): every Request.Data lives in it.
	region := aligned(1 << 20)
	io := newRawQueue(t, tg, region)
	io.connect(1, cntlid)
	pattern := bytes.Repeat([]byte("rdmablk!"), 8192/8)
	copy(region, pattern)
	var w nvme.SQE
	w.SetRW(nvme.IOWrite, 1, 3, 2, 0)
	io.do(w, nvme.DirHostToCtrl, region[:8192])
	var r nvme.SQE
	r.SetRW(nvme.IORead, 1, 3, 2, 0)
	io.do(r, nvme.DirCtrlToHost, region[8192:16384])
	if !bytes.Equal(region[8192:16384], pattern) {
		t.Fatal("read back differs")
	}

	fs := fb.Stats()
	if fs.AsyncIOs == 0 && !ringWorks(t, fb) {
		t.Skipf("file stats %+v: no io_uring O_DIRECT fast path on this host", fs)
	}
	switch {
	case fs.AsyncIOs != 2:
		t.Fatalf("file stats %+v: want both I/Os on the io_uring path", fs)
	case fs.FixedRegions == 0:
		t.Skipf("file stats %+v: the kernel refused fixed buffers here", fs)
	case fs.FixedIOs != 2:
		t.Fatalf("file stats %+v: want both I/Os as fixed-buffer ops", fs)
	}

	// Metering moved into the core: the volume's counters saw both.
	if got := volumeOps(t, m); got["read"] != 1 || got["write"] != 1 {
		t.Fatalf("volume I/O counters %v, want one read and one write", got)
	}
}

// volumeOps returns rdmablk_volume_io_total of volume "vol" by op.
func volumeOps(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "rdmablk_volume_io_total" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["volume"] == "vol" {
				got[labels["op"]] = mt.GetCounter().GetValue()
			}
		}
	}
	return got
}

// aligned returns n zero bytes starting on a 4 KiB boundary.
func aligned(n int) []byte {
	b := make([]byte, n+4096)
	off := int(4096 - uintptr(unsafe.Pointer(&b[0]))%4096)
	return b[off%4096 : off%4096+n]
}

// doneFunc adapts a function to blockdev.Completion.
type doneFunc func(error)

func (f doneFunc) IODone(err error) { f(err) }

// ringWorks reports whether b's io_uring path takes an aligned read here
// (so that a test can tell a host without io_uring from a lost fast path).
func ringWorks(t *testing.T, b *file.Backend) bool {
	var be blockdev.Backend = b
	a, ok := be.(blockdev.Async)
	if !ok {
		return false
	}
	done := make(chan error, 1)
	if !a.SubmitRead(aligned(4096), 0, doneFunc(func(err error) { done <- err })) {
		return false
	}
	select {
	case err := <-done:
		return err == nil
	case <-time.After(10 * time.Second):
		t.Fatal("direct io_uring read never completed")
		return false
	}
}
