package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// A busy queue whose poll group sleeps with its CQs armed and polled
// empty is clean: the wake-up for a request the core hands back
// (Complete) steps it without polling its CQs, and the response goes out;
// a new command (its receive CQ's arm is spent) is still found. Both
// profiles. Had a step trusted cleanliness without the arms, the new
// commands would wait unanswered until the deadline; had the group
// polled anyway, the queue's count of polls would have moved.
func TestCleanQueueSkipsPolls(t *testing.T) {
	forProfiles(t, func(t *testing.T, prof soft.Profile) {
		g := newRig(t, rigOpts{profile: prof, cfg: Config{PollGroups: 1, PollWait: PollWaitChannel}})
		h := g.connectQueue(rawOpts{qid: 1, depth: 32, dataSize: 64 * 1024}, testSubNQN, testHostNQN)
		for round := range 20 {
			cid := uint16(round % 16)
			release := holdOne(t, g, h, cid)
			// Wake the group (inspect rings it) until the I/O queue is
			// clean; from then on nothing arrives on its CQs until the
			// next command, so no step may poll them.
			polls := ioQueueClean(t, g)
			skips := g.l.Stats().CleanSkips
			release()
			expectCID(t, g, h, cid)
			if after := ioQueuePolls(g); after != polls {
				t.Fatalf("the handed-back request's wake-up polled the clean queue's CQs (%d → %d polls)", polls, after)
			}
			if g.l.Stats().CleanSkips == skips {
				t.Fatal("CleanSkips did not count the skipped steps")
			}
			s := h.ioSQE(nvme.IORead, cid+16, 0, 4096, 0, 0)
			if err := h.send(capsule(&s, nil)); err != nil {
				t.Fatal(err)
			}
			expectCID(t, g, h, cid+16)
		}
	})
}

// Config.PollClean false keeps every step polling: the same handed-back
// requests and new commands are answered, and no step skips.
func TestCleanQueueOff(t *testing.T) {
	off := false
	g := newRig(t, rigOpts{cfg: Config{PollGroups: 1, PollWait: PollWaitChannel, PollClean: &off}})
	h := g.connectQueue(rawOpts{qid: 1, depth: 32, dataSize: 64 * 1024}, testSubNQN, testHostNQN)
	for round := range 5 {
		cid := uint16(round)
		release := holdOne(t, g, h, cid)
		g.l.groups[0].inspect(func([]*queue) {})
		release()
		expectCID(t, g, h, cid)
	}
	if n := g.l.Stats().CleanSkips; n != 0 {
		t.Fatalf("CleanSkips %d with PollClean off", n)
	}
}

// ioQueueClean wakes g's group until its I/O queue (qid 1) is clean and
// returns the queue's count of polls then.
func ioQueueClean(t *testing.T, g *rig) uint64 {
	t.Helper()
	for {
		clean, polls := false, uint64(0)
		onIOQueue(g, func(q *queue) { clean, polls = q.clean.on, q.clean.polls })
		if clean {
			return polls
		}
		if g.ctx.Err() != nil {
			t.Fatal("the I/O queue never became clean")
		}
	}
}

// ioQueuePolls is the count of polls of g's I/O queue (qid 1).
func ioQueuePolls(g *rig) (n uint64) {
	onIOQueue(g, func(q *queue) { n = q.clean.polls })
	return n
}

// onIOQueue runs f on g's I/O queue (qid 1) on its group's goroutine.
func onIOQueue(g *rig, f func(q *queue)) {
	g.l.groups[0].inspect(func(qs []*queue) {
		for _, q := range qs {
			if q.params.qid == 1 {
				f(q)
			}
		}
	})
}
