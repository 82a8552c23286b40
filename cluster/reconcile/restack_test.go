package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

const exportHostNQN = "nqn.2014-08.org.nvmexpress:uuid:99999999-2222-3333-4444-555555555555"

// wireConn is a target.QueueConn delivering asynchronous completions.
type wireConn struct{ done chan *target.Request }

func (c *wireConn) Complete(r *target.Request) { c.done <- r }
func (c *wireConn) Close()                     {}

// wireQueue is one queue of a host connected to a node's target, driven
// from one goroutine as a transport drives it.
type wireQueue struct {
	q    *target.Queue
	conn *wireConn
	cid  uint16
}

func newWireQueue(t *testing.T, tg *target.Target) *wireQueue {
	t.Helper()
	conn := &wireConn{done: make(chan *target.Request, 8)}
	q, err := tg.NewQueue(1, conn, 32)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(q.Destroy)
	return &wireQueue{q: q, conn: conn}
}

// submit executes sqe and returns the request once completed, and
// whether it completed in time.
func (w *wireQueue) submit(sqe nvme.SQE, dir nvme.DataDirection, data []byte) (*target.Request, bool) {
	w.cid++
	r := &target.Request{SQE: sqe, Dir: dir, Data: data, Length: uint32(len(data))}
	r.SQE.SetCID(w.cid)
	r.SQE.SetPSDT(nvme.PSDTSGL)
	if !w.q.Execute(r) {
		select {
		case got := <-w.conn.done:
			return got, got == r
		case <-time.After(10 * time.Second):
			return r, false
		}
	}
	return r, true
}

func (w *wireQueue) do(t *testing.T, sqe nvme.SQE, dir nvme.DataDirection, data []byte) *target.Request {
	t.Helper()
	r, ok := w.submit(sqe, dir, data)
	if !ok {
		t.Fatalf("opcode %#x: no completion", sqe.Opcode())
	}
	if st := r.Status(); !st.OK() {
		t.Fatalf("opcode %#x: %v", sqe.Opcode(), st)
	}
	return r
}

// exportHost is a host controller connected to exportNQN on one node's
// target: an admin queue and io I/O queues.
type exportHost struct {
	admin  *wireQueue
	io     []*wireQueue
	cntlid uint16
}

func connectExport(t *testing.T, tg *target.Target, ioQueues int) *exportHost {
	t.Helper()
	connect := func(w *wireQueue, qid, cntlid uint16) uint16 {
		var s nvme.SQE
		s.SetConnect(qid, 31, 0, 0)
		b := make([]byte, nvme.ConnectDataSize)
		d := nvme.ConnectData{CNTLID: cntlid, SubNQN: exportNQN, HostNQN: exportHostNQN}
		if err := d.Marshal(b); err != nil {
			t.Fatal(err)
		}
		return uint16(w.do(t, s, nvme.DirHostToCtrl, b).CQE.DW0())
	}
	h := &exportHost{admin: newWireQueue(t, tg)}
	h.cntlid = connect(h.admin, 0, nvme.DynamicCNTLID)
	var cc nvme.SQE
	cc.SetPropertySet(nvme.PropCC, false, nvme.CCEN|6<<nvme.CCIOSQESShift|4<<nvme.CCIOCQESShift)
	h.admin.do(t, cc, nvme.DirNone, nil)
	var nq nvme.SQE
	nq.SetSetFeatures(nvme.FeatNumQueues, nvme.NumQueuesValue(uint16(ioQueues), uint16(ioQueues)))
	h.admin.do(t, nq, nvme.DirNone, nil)
	for i := range ioQueues {
		w := newWireQueue(t, tg)
		connect(w, uint16(i+1), h.cntlid)
		h.io = append(h.io, w)
	}
	return h
}

func (h *exportHost) identifyNS(t *testing.T) []byte {
	t.Helper()
	var s nvme.SQE
	s.SetIdentify(nvme.CNSNamespace, 1)
	b := make([]byte, nvme.IdentifySize)
	h.admin.do(t, s, nvme.DirCtrlToHost, b)
	return b
}

func (h *exportHost) changedNSList(t *testing.T) []uint32 {
	t.Helper()
	var s nvme.SQE
	s.SetGetLogPage(nvme.LogChangedNSList, 0xFFFFFFFF, 4096, 0)
	b := make([]byte, 4096)
	h.admin.do(t, s, nvme.DirCtrlToHost, b)
	return nvme.ParseNSList(b)
}

// TestFailoverKeepsExportNamespace (issue 16, failover): when the owner
// is lost and a replica node takes the volume over, its export
// namespace stays attached throughout — present while the new owner
// connects to the copies, same NSID and Identify data (NGUID) after, no
// Namespace Attribute Changed event and nothing in the Changed Namespace
// List — and only its backend changed: the path serves the mirror.
// (It used to be detached and re-attached: a kernel multipath host whose
// old path was already dead could drop the device meanwhile.)
func TestFailoverKeepsExportNamespace(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	n2 := c.nodes["n2"]
	h := connectExport(t, n2.tgt, 1)
	var aec nvme.SQE
	aec.SetSetFeatures(nvme.FeatAsyncEventConfig, nvme.AECNSAttr)
	h.admin.do(t, aec, nvme.DirNone, nil)
	var aerSQE nvme.SQE
	aerSQE.SetAsyncEventRequest()
	h.admin.cid++
	aer := &target.Request{SQE: aerSQE}
	aer.SQE.SetCID(h.admin.cid)
	if h.admin.q.Execute(aer) {
		t.Fatalf("AER completed at once: %v", aer.Status())
	}
	before := h.identifyNS(t)

	// While the new owner connects to the copies (mid-pass), its export
	// namespace must be there.
	legs := watchLegOpens(n2, func(lt LegTarget, ts *target.Subsystem, ok bool, ids []uint32) string {
		if !slices.Equal(ids, []uint32{1}) {
			return fmt.Sprintf("opening the leg to %s: export subsystem %v, namespaces %v", lt.Node, ok, ids)
		}
		return ""
	})
	c.nodes["n1"].down.Store(true)
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1,
		State: catalog.ReplicaFaulted, Message: "owner unreachable"})
	if err := c.sync("n3", "n2"); err != nil {
		t.Fatal(err)
	}
	legs.check(t, "the new owner")
	if ov := n2.r.vols["rv"]; ov == nil || ov.role != roleOwner || ov.epoch != 2 {
		t.Fatalf("n2's stack after the failover: %+v", ov)
	}
	select {
	case r := <-h.admin.conn.done:
		t.Fatalf("asynchronous event %#x across the failover (the namespace changed)", r.CQE.DW0())
	default:
	}
	if l := h.changedNSList(t); len(l) != 0 {
		t.Fatalf("Changed Namespace List %v after the failover", l)
	}
	if after := h.identifyNS(t); !bytes.Equal(before, after) {
		t.Fatal("Identify Namespace differs across the failover")
	}
	if got := c.ana(t, "n2"); got != nvme.ANAStateOptimized {
		t.Fatalf("new owner's ANA state %d", got)
	}
	// The same controller, never reconnected, now writes through the
	// mirror: the write is on n3's copy too.
	p := pattern(17, 4096)
	var w nvme.SQE
	w.SetRW(nvme.IOWrite, 1, 12, uint32(len(p)/c.l.volume("rv").BlockSize), 0)
	h.io[0].do(t, w, nvme.DirHostToCtrl, slices.Clone(p))
	if !bytes.Equal(readBytes(t, c.file("n3"), 12, len(p)), p) {
		t.Fatal("a write through the kept namespace is not on n3's copy")
	}
	if !bytes.Equal(readBytes(t, c.file("n2"), 12, len(p)), p) {
		t.Fatal("a write through the kept namespace is not on n2's copy")
	}
}

// TestPlannedFailoverUnderIO (issue 16, failover; run with -race): a
// host keeps writing and reading back through the owner's export while
// the volume fails over to the other node. The old owner's namespace
// stays attached while its backend changes from the mirror to its plain
// copy; every command completes either successfully with the right data
// or with Asymmetric Access Inaccessible (a path error the host retries
// on the other path) — never on a closed backend (Namespace Not Ready)
// or with Invalid Namespace — and every write it acknowledged is on the
// new owner's copy.
func TestPlannedFailoverUnderIO(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	const workers, warm = 3, 20
	h := connectExport(t, c.nodes["n1"].tgt, workers)
	bs := 4096
	nlb := uint32(bs / c.l.volume("rv").BlockSize)
	type result struct {
		acked  []byte // the last write the old owner acknowledged
		ok     int
		refuse nvme.Status
		err    error
	}
	results := make([]result, workers)
	started := make(chan struct{}, workers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var ops atomic.Int64
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			warmed := sync.OnceFunc(func() { started <- struct{}{} })
			defer warmed() // also when it fails before
			res := &results[i]
			lba := uint64(100 + 16*i)
			q := h.io[i]
			for n := 0; ; n++ {
				if n == warm {
					warmed()
				}
				select {
				case <-stop:
					return
				default:
				}
				p := pattern(byte(n+i), bs)
				var w nvme.SQE
				w.SetRW(nvme.IOWrite, 1, lba, nlb, 0)
				r, ok := q.submit(w, nvme.DirHostToCtrl, slices.Clone(p))
				if !ok {
					res.err = fmt.Errorf("write %d: no completion", n)
					return
				}
				if st := r.Status(); !st.OK() {
					if st != nvme.StatusANAInaccessible {
						res.err = fmt.Errorf("write %d: %v, want success or a path error", n, st)
					}
					res.refuse = st
					return // the path is gone: a host fails over
				}
				res.acked = p
				buf := make([]byte, bs)
				var rd nvme.SQE
				rd.SetRW(nvme.IORead, 1, lba, nlb, 0)
				r, ok = q.submit(rd, nvme.DirCtrlToHost, buf)
				if !ok {
					res.err = fmt.Errorf("read %d: no completion", n)
					return
				}
				if st := r.Status(); !st.OK() {
					if st != nvme.StatusANAInaccessible {
						res.err = fmt.Errorf("read %d: %v, want success or a path error", n, st)
					}
					res.refuse = st
					return
				}
				if !bytes.Equal(buf, p) {
					res.err = fmt.Errorf("read %d returned other data", n)
					return
				}
				res.ok++
				ops.Add(1)
			}
		}()
	}
	for range workers {
		<-started
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1})
	if err := c.sync("n1"); err != nil {
		t.Fatal(err)
	}
	atFailover := ops.Load()
	close(stop)
	wg.Wait()
	if err := c.sync("n2"); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d write+read pairs before n1's pass ended", atFailover)
	for i, res := range results {
		if res.err != nil {
			t.Errorf("worker %d: %v", i, res.err)
		}
		if res.acked == nil {
			t.Fatalf("worker %d: no write acknowledged", i)
		}
		lba := uint64(100 + 16*i)
		for _, id := range []string{"n1", "n2"} {
			if !bytes.Equal(readBytes(t, c.file(id), lba, bs), res.acked) {
				t.Errorf("worker %d: %s's copy lacks the last write the old owner acknowledged", i, id)
			}
		}
	}
	ts, _ := c.nodes["n1"].tgt.Subsystem(exportNQN)
	if !slices.Equal(ts.Namespaces(), []uint32{1}) {
		t.Fatalf("old owner's export namespaces %v", ts.Namespaces())
	}
	if ov := c.nodes["n1"].r.vols["rv"]; ov == nil || ov.role != roleReplica {
		t.Fatalf("old owner's stack %+v", ov)
	}
	if got := c.ana(t, "n1"); got != nvme.ANAStateInaccessible {
		t.Fatalf("old owner's ANA state %d", got)
	}
	// The new owner serves the data through its mirror.
	if got := c.ana(t, "n2"); got != nvme.ANAStateOptimized {
		t.Fatalf("new owner's ANA state %d", got)
	}
	for i, res := range results {
		if !bytes.Equal(readBytes(t, c.handle(t, "n2"), uint64(100+16*i), bs), res.acked) {
			t.Errorf("worker %d: the new owner reads other data", i)
		}
	}
}

// TestReplicaAddServesThroughout: adding a copy to a single-copy volume
// turns its owner's stack into a mirror under the live namespace; the
// path stays optimized and attached throughout (it used to be detached
// and served nothing until the mirror was built), and writes reach the
// new copy afterwards.
func TestReplicaAddServesThroughout(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	v, err := catalog.NewVolume(catalog.VolumeSpec{Name: "rv", Size: 4 << 20, Node: "n1"}, hexID("urv"), hexID("grv"))
	if err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateVolume, Volume: &v})
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: exportNQN, Node: "n1", AllowAnyHost: true}})
	c.l.apply(t, catalog.Command{Op: catalog.OpAddNamespace, NQN: exportNQN, Name: "rv"})
	if err := c.sync("n1", "n2"); err != nil {
		t.Fatal(err)
	}
	n1 := c.nodes["n1"]
	h := connectExport(t, n1.tgt, 1)
	before := h.identifyNS(t)
	legs := watchLegOpens(n1, func(lt LegTarget, ts *target.Subsystem, ok bool, ids []uint32) string {
		var ana uint8
		if ok {
			ana = ts.ANAState(1, target.DefaultANAGroup)
		}
		if !slices.Equal(ids, []uint32{1}) || ana != nvme.ANAStateOptimized {
			return fmt.Sprintf("opening the leg to %s: namespaces %v, ANA state %d (want [1], optimized)", lt.Node, ids, ana)
		}
		return ""
	})
	c.l.apply(t, catalog.Command{Op: catalog.OpAddReplica, Name: "rv", Replica: &catalog.Replica{Node: "n2", Path: "rv.img"}})
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	legs.check(t, "the owner")
	if ov := n1.r.vols["rv"]; ov == nil || ov.role != roleOwner {
		t.Fatalf("n1's stack after the replica add: %+v", ov)
	}
	if after := h.identifyNS(t); !bytes.Equal(before, after) {
		t.Fatal("Identify Namespace differs across the replica add")
	}
	p := pattern(23, 4096)
	var w nvme.SQE
	w.SetRW(nvme.IOWrite, 1, 40, uint32(len(p)/c.l.volume("rv").BlockSize), 0)
	h.io[0].do(t, w, nvme.DirHostToCtrl, slices.Clone(p))
	if !bytes.Equal(readBytes(t, c.file("n2"), 40, len(p)), p) {
		t.Fatal("a write after the replica add is not on the new copy")
	}
}

// legWatch records what a node's export subsystem looked like each time
// its reconciler opened a mirror leg — mid-pass, while the stack is being
// rebuilt — and what the test's look found wrong.
type legWatch struct {
	mu     sync.Mutex // OpenLeg runs on the pass's goroutines
	opened int
	during []string
}

// watchLegOpens wraps n's OpenLeg: before each leg opens, look gets the
// export subsystem (ok: it exists) and its namespaces and returns what is
// wrong with them ("" for nothing).
func watchLegOpens(n *nodeRig, look func(lt LegTarget, ts *target.Subsystem, ok bool, ids []uint32) string) *legWatch {
	w := &legWatch{}
	open := n.r.o.OpenLeg
	n.r.o.OpenLeg = func(ctx context.Context, lt LegTarget) (blockdev.Backend, error) {
		var ids []uint32
		ts, ok := n.tgt.Subsystem(exportNQN)
		if ok {
			ids = ts.Namespaces()
		}
		w.mu.Lock()
		w.opened++
		if d := look(lt, ts, ok, ids); d != "" {
			w.during = append(w.during, d)
		}
		w.mu.Unlock()
		return open(ctx, lt)
	}
	return w
}

// check fails the test when who opened no leg (nothing was observed
// mid-pass) or a look found something wrong.
func (w *legWatch) check(t *testing.T, who string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.opened == 0 {
		t.Errorf("%s opened no leg: nothing observed mid-pass", who)
	}
	for _, d := range w.during {
		t.Error(d)
	}
}
