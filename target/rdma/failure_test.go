package rdma

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

func TestCMRejects(t *testing.T) {
	g := newRig(t, rigOpts{cfg: Config{MaxQueueDepth: 64}})
	pd := func(recfmt, qid, hrq, hsq uint16) []byte { return cmReq(recfmt, qid, hrq, hsq) }
	cases := []struct {
		name string
		o    rawOpts
		want uint16
	}{
		// RDMA CM pads private data to the whole field, so a short request
		// arrives as zeros: a one-entry admin queue.
		{"short private data", rawOpts{private: make([]byte, 8)}, nvme.CMRejectInvalidHSQSize},
		{"recfmt 1", rawOpts{private: pd(1, 1, 32, 31)}, nvme.CMRejectInvalidRecfmt},
		{"qid 0xffff", rawOpts{private: pd(0, 0xFFFF, 32, 31)}, nvme.CMRejectInvalidQID},
		{"admin queue of 33", rawOpts{private: pd(0, 0, 33, 32)}, nvme.CMRejectInvalidHSQSize},
		{"io queue above MaxQueueDepth", rawOpts{private: pd(0, 1, 65, 64)}, nvme.CMRejectInvalidHSQSize},
		{"io hsqsize 0", rawOpts{private: pd(0, 1, 1, 0)}, nvme.CMRejectInvalidHSQSize},
		{"hrqsize below hsqsize+1", rawOpts{private: pd(0, 1, 16, 16)}, nvme.CMRejectInvalidHRQSize},
		{"hrqsize above device limit", rawOpts{private: pd(0, 1, 20000, 16)}, nvme.CMRejectInvalidHRQSize},
		{"host IRD 0", rawOpts{qid: 1, depth: 8, irdZero: true}, nvme.CMRejectInvalidIRD},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := g.dial(tc.o)
			if st := rejectStatus(t, err); st != tc.want {
				t.Fatalf("reject status %d, want %d", st, tc.want)
			}
		})
	}
	t.Run("core refuses the queue", func(t *testing.T) {
		g.core.refuseQ.Store(true)
		defer g.core.refuseQ.Store(false)
		_, err := g.dial(rawOpts{qid: 1, depth: 8})
		if st := rejectStatus(t, err); st != nvme.CMRejectNoResources {
			t.Fatalf("reject status %d", st)
		}
	})
	if st := g.l.Stats(); st.Rejected != uint64(len(cases))+1 || st.Queues != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The listener still accepts good requests.
	g.connectQueue(rawOpts{qid: 1, depth: 64}, testSubNQN, testHostNQN)
}

func TestCMRejectNoResourcesFromDevice(t *testing.T) {
	g := newRig(t, rigOpts{tune: func(a *verbs.DeviceAttr) { a.MaxCQE = 100 }})
	_, err := g.dial(rawOpts{qid: 1, depth: 64}) // needs 64 + 128 CQEs
	if st := rejectStatus(t, err); st != nvme.CMRejectNoResources {
		t.Fatalf("reject status %d", st)
	}
	g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN) // 96 fit
}

// waitQueues waits until the listener has at most n queues left, each
// fully released.
func (g *rig) waitQueues(n int) {
	g.t.Helper()
	for {
		g.l.mu.Lock()
		cases := []reflect.SelectCase{{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(g.ctx.Done())}}
		for q := range g.l.queues {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(q.done)})
		}
		g.l.mu.Unlock()
		if len(cases)-1 <= n {
			return
		}
		if i, _, _ := reflect.Select(cases); i == 0 {
			g.t.Fatalf("queues not torn down: %v", g.ctx.Err())
		}
	}
}

// checkAlive proves a host's queue still moves data byte-exact.
func checkAlive(t *testing.T, g *rig, h *rawHost, cid uint16, diskOff uint64) {
	t.Helper()
	want := make([]byte, 16384)
	fill(want, uint64(cid))
	copy(h.data()[0:], want)
	w := h.ioSQE(nvme.IOWrite, cid, diskOff, 16384, 0, 0)
	h.mustOK(g.ctx, &w, nil)
	clear(h.data()[65536 : 65536+16384])
	r := h.ioSQE(nvme.IORead, cid+1, diskOff, 16384, 65536, 0)
	h.mustOK(g.ctx, &r, nil)
	if !bytes.Equal(h.data()[65536:65536+16384], want) {
		t.Fatal("data differs")
	}
}

func TestRemoteAccessErrorsKillOnlyThatQueue(t *testing.T) {
	cases := []struct {
		name string
		sqe  func(bad, good *rawHost) nvme.SQE
	}{
		{"write longer than the host MR", func(bad, _ *rawHost) nvme.SQE {
			// The data area is 64 KiB; the SGL asks for 128 KiB.
			return bad.ioSQE(nvme.IOWrite, 9, 0, 128<<10, 0, 0)
		}},
		{"read longer than the host MR", func(bad, _ *rawHost) nvme.SQE {
			return bad.ioSQE(nvme.IORead, 9, 0, 128<<10, 0, 0)
		}},
		{"write with a foreign rkey", func(bad, good *rawHost) nvme.SQE {
			s := bad.ioSQE(nvme.IOWrite, 9, 0, 4096, 0, 0)
			s.SGL1().SetKeyed(good.dataAddr(0), 4096, good.rkey(), 0)
			return s
		}},
		{"read with a foreign rkey", func(bad, good *rawHost) nvme.SQE {
			s := bad.ioSQE(nvme.IORead, 9, 0, 4096, 0, 0)
			s.SGL1().SetKeyed(good.dataAddr(0), 4096, good.rkey(), 0)
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, rigOpts{})
			good := g.connectQueue(rawOpts{qid: 1, depth: 16, dataSize: 256 << 10}, testSubNQN, testHostNQN)
			bad := g.connectQueue(rawOpts{qid: 1, depth: 16, dataSize: 64 << 10}, testSubNQN, testHostNQN)
			goodBefore := bytes.Clone(good.data()[:4096])
			s := tc.sqe(bad, good)
			rsp, err := bad.do(g.ctx, &s, nil)
			if !errors.Is(err, errQueueDead) {
				t.Fatalf("bad request: got %v (status %v), want the queue to die", err, rsp.cqe.Status())
			}
			g.waitQueues(1)
			if !bytes.Equal(good.data()[:4096], goodBefore) {
				t.Fatal("the other host's memory changed")
			}
			checkAlive(t, g, good, 20, 1<<20)
			if st := g.l.Stats(); st.QueueErrors != 1 || st.Queues != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestMalformedCommandsOverTheWire(t *testing.T) {
	g := newRig(t, rigOpts{})
	h := g.connectQueue(rawOpts{qid: 1, depth: 16, dataSize: 256 << 10}, testSubNQN, testHostNQN)
	other := g.connectQueue(rawOpts{qid: 2, depth: 16, dataSize: 256 << 10}, testSubNQN, testHostNQN)
	expect := func(cid uint16, capsule []byte, want nvme.Status) {
		t.Helper()
		if err := h.send(capsule); err != nil {
			t.Fatal(err)
		}
		rsp, err := h.response(g.ctx)
		if err != nil {
			t.Fatalf("cid %d: %v", cid, err)
		}
		if rsp.cqe.CID() != cid || rsp.cqe.Status() != want || rsp.cqe.SQID() != 1 {
			t.Fatalf("cid %d: CQE cid %d sqid %d status %v, want %v", cid, rsp.cqe.CID(), rsp.cqe.SQID(), rsp.cqe.Status(), want)
		}
	}
	s := h.ioSQE(nvme.IOWrite, 1, 0, 4096, 0, 0)
	s.SGL1().SetKeyed(math.MaxUint64-1000, 4096, h.rkey(), 0)
	expect(1, capsule(&s, nil), nvme.StatusDataSGLLengthInvalid.WithDNR())
	s = h.ioSQE(nvme.IORead, 2, 0, 4096, 0, 0)
	s.SGL1().SetKeyed(h.dataAddr(0), DefaultMaxDataTransfer+4096, h.rkey(), 0)
	expect(2, capsule(&s, nil), nvme.StatusDataSGLLengthInvalid.WithDNR())
	for i, sp := range []struct{ off, n uint64 }{{math.MaxUint32, 16}, {math.MaxUint64 - 8, 16}, {16, math.MaxUint32}, {0, 4096}} {
		var w nvme.SQE
		w.SetRW(nvme.IOWrite, 1, 0, 1, 0)
		w.SetCID(uint16(3 + i))
		w.SetPSDT(nvme.PSDTSGL)
		w.SGL1().SetDataBlock(sp.off, uint32(sp.n), nvme.SGLSubtypeOffset)
		expect(uint16(3+i), capsule(&w, make([]byte, 512)), nvme.StatusSGLOffsetInvalid.WithDNR())
	}
	// A 40-byte capsule: answered for its CID, the queue keeps working.
	s = h.ioSQE(nvme.IORead, 0x1234, 0, 4096, 0, 0)
	expect(0x1234, capsule(&s, nil)[:40], nvme.StatusInvalidField.WithDNR())
	checkAlive(t, g, h, 30, 0)
	if st := g.l.Stats(); st.CommandErrors != 7 || st.QueueErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	// A 3-byte capsule has no CID: only this queue dies.
	if err := h.send([]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.response(g.ctx); !errors.Is(err, errQueueDead) {
		t.Fatalf("3-byte capsule: %v, want the queue dead", err)
	}
	g.waitQueues(1)
	checkAlive(t, g, other, 40, 1<<20)
}

func TestORDOneManyConcurrentWrites(t *testing.T) {
	var peak atomic.Int64
	hooks := &testHooks{readPosted: func(n int) {
		for {
			p := peak.Load()
			if int64(n) <= p || peak.CompareAndSwap(p, int64(n)) {
				return
			}
		}
	}}
	// The host offers IRD 1: the target may keep one READ outstanding.
	g := newRig(t, rigOpts{hooks: hooks, hostTune: func(a *verbs.DeviceAttr) { a.MaxQPRdAtom = 1 }})
	g.core.async.Store(true)
	const n = 48
	h := g.connectQueue(rawOpts{qid: 1, depth: 64, ird: 1, dataSize: n * 16384}, testSubNQN, testHostNQN)
	want := make([]byte, n*16384)
	fill(want, 7)
	copy(h.data(), want)
	for i := range n {
		s := h.ioSQE(nvme.IOWrite, uint16(i), uint64(i)*16384, 16384, i*16384, 0)
		if err := h.send(capsule(&s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[uint16]bool{}
	for range n {
		rsp, err := h.response(g.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !rsp.cqe.Status().OK() || seen[rsp.cqe.CID()] {
			t.Fatalf("cid %d status %v (dup %v)", rsp.cqe.CID(), rsp.cqe.Status(), seen[rsp.cqe.CID()])
		}
		seen[rsp.cqe.CID()] = true
	}
	if !bytes.Equal(g.core.disk[:n*16384], want) {
		t.Fatal("disk differs from the written data")
	}
	if p := peak.Load(); p != 1 {
		t.Fatalf("peak RDMA READs in flight %d, want 1", p)
	}
}
