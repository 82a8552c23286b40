package rdma

import "github.com/rdmablk/rdmablk/verbs"

// Quiet queues. A group's pass steps every queue, and a step polls both
// of the queue's CQs: two provider calls (cgo for ibverbs), which on a
// target with idle connections (admin queues, hosts not doing I/O right
// now) are most of what a pass costs. In the lab's replicated-write
// benchmark (issue 16) one queue of four was busy, and the group passed
// about three times per write, each pass polling eight CQs.
//
// So a queue whose steps keep finding nothing goes quiet: it arms its
// receive CQ and polls once more (a completion that landed before the arm
// raises no event), and from then on the group's passes skip it until
// something can be there — its receive CQ's arm is spent (a completion
// event came: the provider clears the arm before it rings the group,
// verbs.ArmReporter), the core handed back a request (compCh; Complete
// rings the group), a control event (pass handles those first) or a
// drain. A queue goes quiet only once every signaled send it posted has
// been reaped (outstanding) and nothing waits for a send completion
// (needSendEvents): its send CQ has nothing to give until the queue
// posts again, which only a step does.
//
// Nothing else arms a quiet queue's receive CQ: the group's sleep passes
// it by, since re-arming a spent arm could find the completion it
// announced (ibverbs probes for one with a poll, stashes it and stays
// armed) and leave the queue looking armed with that completion
// unpolled, for as long as no other completion came.
//
// Only where the CQs report their arm and their events ring the group's
// bell (q.routed; not in the epoll mode, where the group takes events
// from their descriptors itself and the arm holds until it does), and
// only with Config.PollQuietAfter > 0: the number of consecutive empty
// steps that make a queue quiet. A busy queue's empty streaks last until
// the group sleeps (at most Config.PollSpins passes), so 64 or more keeps
// busy queues polled and lets an idle one go quiet within a fraction of
// a second.

// quietState is a queue's quiet bookkeeping; group goroutine only.
type quietState struct {
	can   bool              // routed, and the receive CQ reports its arm
	arm   verbs.ArmReporter // the receive CQ
	on    bool              // quiet: passes skip the queue
	empty int               // consecutive steps that found nothing
}

// initQuiet decides whether q may go quiet (group.add, before the group
// owns q).
func (q *queue) initQuiet() {
	a, ok := q.cq.(verbs.ArmReporter)
	q.quiet = quietState{can: ok && q.routed && q.l.cfg.PollQuietAfter > 0, arm: a}
}

// skip reports whether the pass leaves quiet q alone; a queue that has
// something to do leaves quiet. Called after control events.
func (q *queue) skip() bool {
	if !q.quiet.on {
		return false
	}
	if q.quiet.arm.Armed() && len(q.compCh) == 0 && !q.draining {
		return true
	}
	q.quiet.on, q.quiet.empty = false, 0
	q.l.stats.quietWakes.Add(1)
	return false
}

// settle counts a step's outcome and makes q quiet after quietAfter
// empty ones. It reports work found by its own step (the poll after the
// arm).
func (q *queue) settle(worked bool) bool {
	if !q.quiet.can || worked {
		q.quiet.empty = 0
		return false
	}
	if q.quiet.empty++; q.quiet.empty < q.l.cfg.PollQuietAfter || q.outstanding > 0 || q.needSendEvents() || q.dying {
		return false
	}
	q.quiet.empty = 0
	// Arming anew may stash a completion (ibverbs): the step below must
	// poll, clean or not (clean.go).
	q.clean.on = false
	if err := q.cq.ReqNotify(); err != nil {
		q.fatal("arming the CQ", err)
		return true
	}
	if q.step() {
		return true
	}
	q.quiet.on = true
	q.l.stats.quietEntries.Add(1)
	return false
}
