package initiator

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// testQpair is a bare qpair on the fake verbs with held responses.
type testQpair struct {
	q         *qpair
	fqp       *fakeQP
	completed []uint16
	failed    []error
}

func newTestQpair(t *testing.T, depth int) *testQpair {
	t.Helper()
	mem := &fakeMem{}
	cq := newFakeCQ()
	fqp := &fakeQP{t: t, mem: mem, cq: cq, bs: 512, disk: make([]byte, 512*64)}
	tq := &testQpair{fqp: fqp}
	q := newFakeQpair(t, mem, fqp, cq, 1, depth, 0)
	q.onComplete = func(i uint16) { tq.completed = append(tq.completed, i) }
	q.onFail = func(err error) { tq.failed = append(tq.failed, err) }
	tq.q = q
	t.Cleanup(func() { _ = q.destroy() })
	return tq
}

// submitFlush allocates a slot with a Flush command and posts it.
func (tq *testQpair) submitFlush(t *testing.T) (uint16, uint16) {
	t.Helper()
	i, e, ok := tq.q.alloc()
	if !ok {
		t.Fatal("no slot")
	}
	e.SetFlush(1)
	tq.q.setData(i, e, nil, 0, false, false)
	tq.q.queueSend(i)
	if err := tq.q.flush(); err != nil {
		t.Fatal(err)
	}
	return i, e.CID()
}

func TestQpairCIDsUniqueWhileOutstanding(t *testing.T) {
	tq := newTestQpair(t, 8)
	seen := map[uint16]bool{}
	for k := 0; k < 8; k++ {
		i, cid := tq.submitFlush(t)
		if seen[cid] {
			t.Fatalf("CID %#x reused while outstanding", cid)
		}
		seen[cid] = true
		if cid&tq.q.slotMask != i {
			t.Fatalf("CID %#x does not encode slot %d", cid, i)
		}
	}
	if _, _, ok := tq.q.alloc(); ok {
		t.Fatal("alloc beyond depth")
	}
}

func TestQpairCIDGenerationChangesOnReuse(t *testing.T) {
	tq := newTestQpair(t, 4)
	i, cid1 := tq.submitFlush(t)
	tq.fqp.release()
	tq.q.poll()
	if len(tq.completed) != 1 || tq.completed[0] != i {
		t.Fatalf("completed %v", tq.completed)
	}
	tq.q.release(i)
	// LIFO free list: the same slot comes back with a new generation.
	j, cid2 := tq.submitFlush(t)
	if j != i || cid2 == cid1 {
		t.Fatalf("slot %d cid %#x after slot %d cid %#x", j, cid2, i, cid1)
	}
}

func TestQpairCompletesOnlyAfterSendAndResponse(t *testing.T) {
	tq := newTestQpair(t, 4)
	cq := tq.fqp.cq
	i, cid := tq.submitFlush(t)
	// Take the SEND completion out and deliver the response first.
	var wc [1]verbs.WorkCompletion
	if n, _ := cq.Poll(wc[:]); n != 1 || wc[0].Opcode != verbs.WCSend {
		t.Fatalf("expected the send completion, got %d %+v", n, wc[0])
	}
	var cqe nvme.CQE
	cqe.SetCID(cid)
	tq.fqp.sendCQE(cqe)
	tq.q.poll()
	if len(tq.completed) != 0 {
		t.Fatal("completed before the SEND completion")
	}
	cq.push(wc[0])
	tq.q.poll()
	if len(tq.completed) != 1 || tq.completed[0] != i {
		t.Fatalf("completed %v", tq.completed)
	}
	if len(tq.failed) != 0 {
		t.Fatalf("failed: %v", tq.failed)
	}
}

func TestQpairRepostsReceiveAfterResponse(t *testing.T) {
	tq := newTestQpair(t, 4)
	before := len(tq.fqp.recvs)
	tq.submitFlush(t)
	tq.fqp.release()
	if len(tq.fqp.recvs) != before-1 {
		t.Fatalf("response did not consume a receive")
	}
	tq.q.poll()
	if len(tq.fqp.recvs) != before {
		t.Fatalf("receive not reposted: %d of %d", len(tq.fqp.recvs), before)
	}
}

func TestQpairProtocolErrors(t *testing.T) {
	cases := []struct {
		name          string
		run           func(t *testing.T, tq *testQpair)
		wantCompleted int
	}{
		{"unknown CID", func(t *testing.T, tq *testQpair) {
			var cqe nvme.CQE
			cqe.SetCID(3) // slot 3 never allocated
			tq.fqp.sendCQE(cqe)
		}, 0},
		{"CID beyond the slot table", func(t *testing.T, tq *testQpair) {
			var cqe nvme.CQE
			cqe.SetCID(tq.q.slotMask) // depth 5 → 3 bits, slot 7 > 4
			tq.fqp.sendCQE(cqe)
		}, 0},
		{"stale generation", func(t *testing.T, tq *testQpair) {
			_, cid := tq.submitFlush(t)
			var cqe nvme.CQE
			cqe.SetCID(cid + 1<<tq.q.slotBits)
			tq.fqp.sendCQE(cqe)
		}, 0},
		{"duplicate response", func(t *testing.T, tq *testQpair) {
			_, cid := tq.submitFlush(t)
			var cqe nvme.CQE
			cqe.SetCID(cid)
			tq.fqp.sendCQE(cqe)
			tq.fqp.sendCQE(cqe)
		}, 1},
		{"short response", func(t *testing.T, tq *testQpair) {
			tq.submitFlush(t)
			tq.fqp.cq.push(verbs.WorkCompletion{ID: wrRecv, Opcode: verbs.WCRecv, ByteLen: 8})
		}, 0},
		{"unknown receive ID", func(t *testing.T, tq *testQpair) {
			tq.fqp.cq.push(verbs.WorkCompletion{ID: wrRecv | 99, Opcode: verbs.WCRecv, ByteLen: 16})
		}, 0},
		{"send completion for free slot", func(t *testing.T, tq *testQpair) {
			tq.fqp.cq.push(verbs.WorkCompletion{ID: 2, Opcode: verbs.WCSend})
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tq := newTestQpair(t, 5)
			tc.run(t, tq)
			tq.q.poll()
			if len(tq.failed) != 1 {
				t.Fatalf("failures %v, want exactly one", tq.failed)
			}
			if !errors.Is(tq.failed[0], ErrProtocol) || !errors.Is(tq.failed[0], ErrControllerLost) {
				t.Fatalf("failure %v does not wrap ErrProtocol and ErrControllerLost", tq.failed[0])
			}
			if len(tq.completed) != tc.wantCompleted {
				t.Fatalf("completed %v", tq.completed)
			}
			// A dead qpair refuses to post and keeps failing quietly.
			if err := tq.q.flush(); err == nil {
				t.Fatal("flush on a failed qpair succeeded")
			}
			tq.q.poll()
			if len(tq.failed) != 1 {
				t.Fatalf("failure reported again: %v", tq.failed)
			}
		})
	}
}

func TestQpairWorkCompletionErrorFails(t *testing.T) {
	tq := newTestQpair(t, 4)
	tq.submitFlush(t)
	tq.fqp.cq.push(verbs.WorkCompletion{ID: wrRecv | 1, Status: verbs.WCWRFlushErr})
	tq.q.poll()
	if len(tq.failed) != 1 || !errors.Is(tq.failed[0], ErrControllerLost) {
		t.Fatalf("failed %v", tq.failed)
	}
	var got []uint16
	tq.q.failOutstanding(func(i uint16) { got = append(got, i) })
	if len(got) != 1 {
		t.Fatalf("failOutstanding returned %v, want the one outstanding slot", got)
	}
	tq.q.failOutstanding(func(i uint16) { t.Fatalf("slot %d failed twice", i) })
}

func TestQpairLimitHonoursControllerReceiveQueue(t *testing.T) {
	tq := newTestQpair(t, 8)
	tq.q.limit(3)
	for k := 0; k < 3; k++ {
		i, _, ok := tq.q.alloc()
		if !ok || i >= 3 {
			t.Fatalf("alloc %d: slot %d ok %v", k, i, ok)
		}
	}
	if _, _, ok := tq.q.alloc(); ok {
		t.Fatal("more than CRQSIZE commands outstanding")
	}
}

func TestClampDepth(t *testing.T) {
	cases := []struct {
		depth int
		attr  verbs.DeviceAttr
		want  int
	}{
		{128, verbs.DeviceAttr{}, 128},
		{4096, verbs.DeviceAttr{MaxQPWR: 1024, MaxCQE: 262144}, 1024},
		{512, verbs.DeviceAttr{MaxQPWR: 1024, MaxCQE: 600}, 300},
		{1 << 20, verbs.DeviceAttr{}, 1 << 16},
	}
	for _, tc := range cases {
		if got := clampDepth(tc.depth, tc.attr); got != tc.want {
			t.Errorf("clampDepth(%d, %+v) = %d, want %d", tc.depth, tc.attr, got, tc.want)
		}
	}
}
