package rdma

import "github.com/rdmablk/rdmablk/verbs"

// Clean CQs. Every step polls both of its queue's CQs, and a poll group
// that goes to sleep passes once more after arming them, so a wake-up
// that brings no completion — the core handing back requests (compCh:
// a replicated write's copies answered, a backend finished) — used to
// cost a busy queue three passes of two CQ polls each (cgo calls on
// ibverbs) around the one send it needed. In the lab's replicated-write
// benchmark (issue 16) that was about two provider calls per write more
// than an unreplicated write's.
//
// A queue whose CQs the group armed and then polled empty is clean.
// While both arms hold (verbs.ArmReporter: the provider clears an arm
// before it delivers the completion event), no completion has arrived
// since that poll, so steps leave the CQs alone and only hand back
// requests and send. The send CQ may be unarmed (arm arms it only while
// something waits for a send completion, needSendEvents); then its
// completions are not needed until needSendEvents says so, and a step
// that finds that polls again. Their completions still return the
// sends' credits and slots: the pass after the group's arm polls the
// unarmed send CQ of a clean queue that has signaled sends outstanding,
// one provider call instead of the unclean queue's two, so a queue that
// falls idle ends with its accounting back at rest as before (a
// completion later than that waits for the queue's next command, the
// group's next sleep, or the first wait for a send completion — a
// neighbour keeping the group busy may hold a clean queue's slots that
// long; nothing waits on them unless needSendEvents says so). Any poll
// of both CQs ends cleanliness; only the pass after the group's arm
// starts it (group.run sets afterArm), so a completion the provider
// stashed while arming (ibverbs probes with a poll) is always polled
// first. A QP or CQ error flushes the QP's posted receives into the
// receive CQ (the providers move a QP to the error state on their CQ's
// overrun), and that event ends cleanliness, so a clean queue still
// finds the error; ibverbs also clears an overrun CQ's arm.
//
// The group's arm leaves a clean queue alone while its arms hold: with
// nothing armed anew nothing can have been stashed, and the pass after
// the arm need not poll it either.
//
// Only where the CQs report their arm and their events ring the group's
// bell (q.routed, as for quiet queues: in the epoll mode the arm holds
// until the group takes the event from the descriptor), and unless
// Config.PollClean turns it off.

// cleanState is a queue's clean bookkeeping; group goroutine only.
type cleanState struct {
	rarm, sarm verbs.ArmReporter // the receive and the send CQ; nil: never clean
	on         bool
	polls      uint64 // steps that polled both CQs (tests read it through inspect)
}

// initClean decides whether q's CQs may be left unpolled (group.add,
// before the group owns q).
func (q *queue) initClean() {
	r, ok1 := q.cq.(verbs.ArmReporter)
	s, ok2 := q.scq.(verbs.ArmReporter)
	if c := q.l.cfg.PollClean; ok1 && ok2 && q.routed && (c == nil || *c) {
		q.clean = cleanState{rarm: r, sarm: s}
	}
}

// stillClean reports whether q's CQs have nothing for a step: q is clean,
// the receive CQ's arm holds, and the send CQ's holds or nothing waits
// for it. It ends cleanliness otherwise.
func (q *queue) stillClean() bool {
	if !q.clean.on {
		return false
	}
	if q.clean.rarm.Armed() && (q.clean.sarm.Armed() || !q.needSendEvents()) {
		return true
	}
	q.clean.on = false
	return false
}

// notePoll records a step's poll of both CQs: in the pass after the
// group's arm an empty poll makes q clean; any other poll ends it.
func (q *queue) notePoll(n int) {
	q.clean.polls++
	q.clean.on = n == 0 && q.clean.rarm != nil && q.g != nil && q.g.afterArm
}
