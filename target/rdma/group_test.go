package rdma

import (
	"runtime"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// Issue 12 item 2: one poll group serves many queues with I/O interleaved
// on all of them; every command is answered once, on its own queue, with
// the SQ head in order, and each queue's send-queue, READ and slot
// accounting returns exactly to its initial state.
//
// Both ways an idle group sleeps are covered: in epoll_wait with the CQs'
// descriptors in its set (the soft provider implements verbs.FDNotifier),
// and on its bell channel with the CQ events routed to it.
func TestPollGroupManyQueues(t *testing.T) {
	for _, wait := range []string{PollWaitEpoll, PollWaitChannel} {
		t.Run(wait, func(t *testing.T) { testPollGroupManyQueues(t, wait) })
	}
}

func testPollGroupManyQueues(t *testing.T, wait string) {
	g := newRig(t, rigOpts{cfg: Config{PollGroups: 1, PollWait: wait}})
	const nq, per = 12, 16
	hs := make([]*rawHost, nq)
	for i := range hs {
		hs[i] = g.connectQueue(rawOpts{qid: 1, depth: 32, dataSize: per * 8192}, testSubNQN, testHostNQN)
	}
	for _, h := range hs {
		for j := range per {
			op := uint8(nvme.IORead)
			if j%2 == 1 {
				op = nvme.IOWrite
			}
			s := h.ioSQE(op, uint16(j), uint64(j)*8192, 8192, j*8192, 0)
			if err := h.send(capsule(&s, nil)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for qi, h := range hs {
		seen := make(map[uint16]bool)
		head := uint16(1) // the Connect was entry 0
		for range per {
			rsp, err := h.response(g.ctx)
			if err != nil || !rsp.cqe.Status().OK() {
				t.Fatalf("queue %d: %v %v", qi, err, rsp.cqe.Status())
			}
			cid := rsp.cqe.CID()
			if cid >= per || seen[cid] {
				t.Fatalf("queue %d: CQE cid %d unexpected or twice", qi, cid)
			}
			seen[cid] = true
			head++
			if rsp.cqe.SQHD() != head {
				t.Fatalf("queue %d: SQHD %d, want %d (completions in order)", qi, rsp.cqe.SQHD(), head)
			}
		}
	}
	// Quiescence: every SEND completion polled, accounting back to start.
	for {
		var bad string
		g.l.groups[0].inspect(func(qs []*queue) {
			if len(qs) != nq {
				bad = "queues in the group"
				return
			}
			for _, q := range qs {
				switch {
				case q.sendCredits != q.params.sendQ:
					bad = "send credits"
				case q.readCredits != q.params.ord:
					bad = "READ credits"
				case q.active != 0 || q.outstanding != 0 || q.executing != 0:
					bad = "slots"
				case freeData(q) != allData(q):
					bad = "data buffers"
				}
			}
		})
		if bad == "" {
			break
		}
		select {
		case <-g.ctx.Done():
			t.Fatalf("accounting not back to its initial state: %s", bad)
		default:
		}
	}
	// No watcher goroutine relays CQ events: they are in the group's
	// epoll set, or routed to its bell.
	g.l.groups[0].inspect(func(qs []*queue) {
		for _, q := range qs {
			switch {
			case wait == PollWaitEpoll && len(q.fdCQs) != 2:
				t.Errorf("queue %d: %d CQs in the group's epoll set, want 2", q.params.qid, len(q.fdCQs))
			case wait == PollWaitChannel && !q.routed:
				t.Errorf("queue %d: CQ events not routed to the group's bell", q.params.qid)
			}
		}
	})
}

// Queues are spread over the poll groups at connect, the least loaded
// first, and leave their group's count when torn down.
func TestPollGroupAssignment(t *testing.T) {
	g := newRig(t, rigOpts{cfg: Config{PollGroups: 2}})
	var hs []*rawHost
	for range 4 {
		hs = append(hs, g.connectQueue(rawOpts{qid: 1, depth: 8}, testSubNQN, testHostNQN))
	}
	loads := func() []int {
		var out []int
		for _, pg := range g.l.groups {
			pg.mu.Lock()
			out = append(out, pg.load)
			pg.mu.Unlock()
		}
		return out
	}
	if l := loads(); l[0] != 2 || l[1] != 2 {
		t.Fatalf("group loads %v, want [2 2]", l)
	}
	hs[0].close()
	hs[1].close()
	g.waitQueues(2)
	for {
		if l := loads(); l[0]+l[1] == 2 {
			break
		}
		select {
		case <-g.ctx.Done():
			t.Fatalf("group loads %v after two queues ended", loads())
		default:
			runtime.Gosched()
		}
	}
}
