package replica

import (
	"fmt"

	"github.com/rdmablk/rdmablk/initiator"
)

// batch is the leg's blockdev.AsyncBatcher state: while a Plug is
// outstanding, async I/O goes through one of the session's Submitters and
// waits in its initiator queue's intake; the Unplug that releases the
// last Plug issues the burst on the calling goroutine (the target's
// poller) in one post, with no hand-off to the initiator's queue
// goroutine. Each burst takes the next queue in turn. Blocking calls never
// wait for an Unplug: they are submitted at once.
type batch struct {
	subs  []*initiator.Submitter // one per initiator I/O queue
	plugs int                    // outstanding Plugs
	cur   int                    // the Submitter of this burst
	held  bool                   // cur holds requests for the next Flush
}

// newBatch makes one Submitter per I/O queue of s's current path.
func newBatch(s *initiator.Session) (batch, error) {
	n := 1
	if lim, ok := s.Limits(); ok && lim.Queues > 0 {
		n = lim.Queues
	}
	b := batch{subs: make([]*initiator.Submitter, n)}
	for i := range b.subs {
		sub, err := s.Submitter(i)
		if err != nil {
			return batch{}, fmt.Errorf("replica: %w", err)
		}
		b.subs[i] = sub
	}
	return b, nil
}

// Plug implements blockdev.AsyncBatcher. Any goroutine; never blocks on
// I/O.
func (l *Leg) Plug() {
	l.bmu.Lock()
	if l.b.plugs == 0 {
		l.b.cur = (l.b.cur + 1) % len(l.b.subs)
	}
	l.b.plugs++
	l.bmu.Unlock()
}

// Unplug implements blockdev.AsyncBatcher: the last one issues what the
// burst held. Completions it finds go to the leg's completion goroutine
// (never IODone on the caller's goroutine, which holds the batch lock).
// Any goroutine; never blocks on I/O.
func (l *Leg) Unplug() {
	l.bmu.Lock()
	if l.b.plugs > 0 {
		l.b.plugs--
	}
	if l.b.plugs == 0 {
		l.flushLocked()
	}
	l.bmu.Unlock()
}

// flushLocked issues what the current Submitter holds. Requests that
// complete during the Flush (it finishes what the queue has completed)
// go to the completion goroutine (l.batching, RequestDone). bmu held.
func (l *Leg) flushLocked() {
	if l.b.held {
		l.b.held = false
		l.batching.Store(true)
		l.b.subs[l.b.cur].Flush()
		l.batching.Store(false)
	}
}

// submitBatched submits r through the burst's Submitter when a Plug is
// outstanding, and reports whether it did. A request refused at once
// completes inside the Submit: to the completion goroutine, as in Flush.
func (l *Leg) submitBatched(r *initiator.Request) bool {
	l.bmu.Lock()
	defer l.bmu.Unlock()
	if l.b.plugs == 0 {
		return false
	}
	l.batching.Store(true)
	_ = l.b.subs[l.b.cur].Submit(r) // fails only for a request without Notify
	l.batching.Store(false)
	l.b.held = true
	return true
}
