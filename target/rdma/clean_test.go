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
// polled anyway, CleanSkips would stay 0.
func TestCleanQueueSkipsPolls(t *testing.T) {
	forProfiles(t, func(t *testing.T, prof soft.Profile) {
		g := newRig(t, rigOpts{profile: prof, cfg: Config{PollGroups: 1, PollWait: PollWaitChannel}})
		h := g.connectQueue(rawOpts{qid: 1, depth: 32, dataSize: 64 * 1024}, testSubNQN, testHostNQN)
		for round := range 20 {
			cid := uint16(round % 16)
			release := holdOne(t, g, h, cid)
			// Wake the group (inspect rings it) until a step skips
			// the queue's polls: from then on it is clean, and stays
			// so until a completion comes.
			for skips := g.l.Stats().CleanSkips; g.l.Stats().CleanSkips == skips; {
				g.l.groups[0].inspect(func([]*queue) {})
				if g.ctx.Err() != nil {
					t.Fatal("the queue never became clean")
				}
			}
			skips := g.l.Stats().CleanSkips
			release()
			expectCID(t, g, h, cid)
			if g.l.Stats().CleanSkips == skips {
				t.Fatal("the handed-back request's wake-up polled the clean queue's CQs")
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
