package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// An idle queue of a busy poll group goes quiet (its CQs are no longer
// polled every pass) and is stepped again when it has something to do: a
// request the core completes later (Complete: compCh), and a new command
// (its receive CQ's arm is spent). Either missed would leave the command
// unanswered until the test's deadline.
func TestQuietQueue(t *testing.T) {
	g := newRig(t, rigOpts{cfg: Config{PollGroups: 1, PollWait: PollWaitChannel, PollQuietAfter: 64}})
	o := rawOpts{qid: 1, depth: 32, dataSize: 64 * 1024}
	busy := g.connectQueue(o, testSubNQN, testHostNQN)
	idle := g.connectQueue(o, testSubNQN, testHostNQN)

	roundTrip := func(h *rawHost, cid uint16) {
		t.Helper()
		s := h.ioSQE(nvme.IORead, cid, 0, 4096, 0, 0)
		if err := h.send(capsule(&s, nil)); err != nil {
			t.Fatal(err)
		}
		expectCID(t, g, h, cid)
	}
	// quietIdle keeps the busy queue at work (each command is at least
	// one pass of the group) until the idle queue is quiet. The idle
	// queue is the one holding a request in the core the first time.
	var idleQ *queue
	quietIdle := func() {
		t.Helper()
		for i := range 5000 {
			roundTrip(busy, uint16(i%16))
			on := false
			g.l.groups[0].inspect(func(qs []*queue) {
				for _, q := range qs {
					if idleQ == nil && q.params.qid == 1 && q.executing == 1 {
						idleQ = q
					}
				}
				on = idleQ != nil && idleQ.quiet.on
			})
			if on {
				return
			}
		}
		t.Fatal("the idle queue never went quiet")
	}

	// A command of the idle queue parks in the core; the queue goes quiet
	// while the core holds it, and answers once the core completes it.
	release := holdOne(t, g, idle, 7)
	quietIdle()
	entries := g.l.Stats().QuietEntries
	release()
	expectCID(t, g, idle, 7)

	// Quiet again with nothing in the core; a new command wakes it.
	quietIdle()
	if g.l.Stats().QuietEntries <= entries {
		t.Fatal("QuietEntries did not count the second quiet spell")
	}
	roundTrip(idle, 8)
	if w := g.l.Stats().QuietWakes; w < 2 {
		t.Fatalf("QuietWakes %d, want ≥ 2", w)
	}
	if g.l.Stats().Spins == 0 {
		t.Fatal("Spins counted no spin of the busy group")
	}
}

// expectCID waits for h's next response and checks it answers cid with
// success.
func expectCID(t *testing.T, g *rig, h *rawHost, cid uint16) {
	t.Helper()
	rsp, err := h.response(g.ctx)
	if err != nil {
		t.Fatalf("waiting for the response to cid %d: %v", cid, err)
	}
	if rsp.cqe.CID() != cid || !rsp.cqe.Status().OK() {
		t.Fatalf("response cid %d status %v, want cid %d OK", rsp.cqe.CID(), rsp.cqe.Status(), cid)
	}
}

// holdOne sends a 4 KiB write with cid on h and waits until the core
// parks it; the core runs later commands at once. The returned function
// lets the parked one complete (also at cleanup).
func holdOne(t *testing.T, g *rig, h *rawHost, cid uint16) func() {
	t.Helper()
	release := heldRelease(t, g)
	s := h.ioSQE(nvme.IOWrite, cid, 0, 4096, 0, 0)
	if err := h.send(capsule(&s, nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.core.heldEv:
	case <-g.ctx.Done():
		t.Fatal("the command did not reach the core")
	}
	g.core.hold.Store(nil)
	return release
}
