package soft

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/verbs"
)

// completionQueue is a soft ibv_cq: a ring of Depth completions filled by
// the soft NIC (under the producing QP's lock) and drained by Poll.
type completionQueue struct {
	dev    *device
	depth  int
	vector int
	own    chan struct{}                 // the CQ's own event channel, capacity 1
	notify atomic.Pointer[chan struct{}] // where completion events go (own unless routed)

	mu      sync.Mutex // guards the fields below
	ring    []cqEntry
	head    int
	count   int
	armed   bool
	overrun bool
	closed  bool
	// detached: events go to efd, not to notify (verbs.FDNotifier,
	// fdnotify_linux.go); efd is the CQ's eventfd, made by the first
	// DetachNotify, -1 before, closed by Close.
	detached bool
	efd      int
	qps      map[*qp]struct{} // QPs using the CQ (send or receive side)
}

var (
	_ verbs.CompletionQueue = (*completionQueue)(nil)
	_ verbs.NotifyRouter    = (*completionQueue)(nil)
	_ verbs.ArmReporter     = (*completionQueue)(nil)
)

// cqEntry is a completion plus the work-queue slots polling it frees.
type cqEntry struct {
	wc     verbs.WorkCompletion
	freed  *atomic.Uint64 // the QP's sqFreed or rqFreed
	freeTo uint64         // every slot below this index is free once polled
}

func newCQ(d *device, depth, vector int) *completionQueue {
	cq := &completionQueue{
		dev: d, depth: depth, vector: vector,
		own:  make(chan struct{}, 1),
		ring: make([]cqEntry, depth),
		qps:  make(map[*qp]struct{}),
		efd:  -1,
	}
	cq.notify.Store(&cq.own)
	return cq
}

// Poll copies up to len(wc) completions. After an overrun it returns
// verbs.ErrCQOverrun (and no completions) forever: the CQ is in the error
// state, as on hardware. Poll(nil) is a cheap error check.
func (cq *completionQueue) Poll(wc []verbs.WorkCompletion) (int, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return 0, fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	if cq.overrun {
		return 0, verbs.ErrCQOverrun
	}
	n := 0
	for n < len(wc) && cq.count > 0 {
		e := &cq.ring[cq.head]
		wc[n] = e.wc
		e.freed.Store(e.freeTo) // polls are serialized by mu: in order
		e.freed = nil
		cq.head++
		if cq.head == cq.depth {
			cq.head = 0
		}
		cq.count--
		n++
	}
	return n, nil
}

// ReqNotify arms the CQ: the next completion added (or an overrun) sends one
// token on Notify. Arming a CQ that already holds completions (or has
// overrun) sends the token at once, so verbs.Wait after an empty Poll
// cannot miss a completion that landed in between.
func (cq *completionQueue) ReqNotify() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	cq.armed = true
	if cq.count > 0 || cq.overrun {
		cq.signalLocked()
	}
	return nil
}

func (cq *completionQueue) Notify() <-chan struct{} { return *cq.notify.Load() }

// Armed implements verbs.ArmReporter: signalLocked disarms before it
// sends the token.
func (cq *completionQueue) Armed() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.armed
}

// RouteNotify implements verbs.NotifyRouter.
func (cq *completionQueue) RouteNotify(ch chan struct{}) {
	if ch == nil {
		ch = cq.own
	}
	cq.notify.Store(&ch)
}
func (cq *completionQueue) Depth() int { return cq.depth }

// Close destroys the CQ; ErrInvalid while QPs use it.
func (cq *completionQueue) Close() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	if len(cq.qps) > 0 {
		return fmt.Errorf("%w: completion queue in use by %d QPs", verbs.ErrInvalid, len(cq.qps))
	}
	cq.closed = true
	cq.closeFDLocked()
	cq.dev.release(&cq.dev.nCQ)
	return nil
}

// attach records q as a user; it fails once the CQ is closed.
func (cq *completionQueue) attach(q *qp) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	cq.qps[q] = struct{}{}
	return nil
}

func (cq *completionQueue) detach(q *qp) {
	cq.mu.Lock()
	delete(cq.qps, q)
	cq.mu.Unlock()
}

// push adds a completion; polling it stores freeTo into freed, releasing
// the work-queue slots. It is called with the producing QP's lock held,
// which keeps each QP's completions in order. A full CQ overruns: the
// completion is lost, the CQ enters the error state and every QP using it
// is moved to the error state (asynchronously, since the caller holds a QP
// lock).
func (cq *completionQueue) push(wc *verbs.WorkCompletion, freed *atomic.Uint64, freeTo uint64) {
	cq.mu.Lock()
	if cq.overrun || cq.closed {
		cq.mu.Unlock()
		return
	}
	if cq.count == cq.depth {
		cq.overrun = true
		victims := make([]*qp, 0, len(cq.qps))
		for q := range cq.qps {
			victims = append(victims, q)
		}
		cq.signalLocked()
		if cq.detached {
			// An overrun reaches Notify's channel even while detached
			// (verbs.FDNotifier).
			cq.tokenLocked()
		}
		cq.mu.Unlock()
		cq.dev.p.spawn(func() {
			for _, q := range victims {
				q.injectError()
			}
		})
		return
	}
	i := cq.head + cq.count
	if i >= cq.depth {
		i -= cq.depth
	}
	cq.ring[i] = cqEntry{wc: *wc, freed: freed, freeTo: freeTo}
	cq.count++
	cq.signalLocked()
	cq.mu.Unlock()
}

// signalLocked sends the completion event if the CQ is armed.
func (cq *completionQueue) signalLocked() {
	if !cq.armed {
		return
	}
	cq.armed = false
	if cq.detached {
		cq.fdSignalLocked()
		return
	}
	cq.tokenLocked()
}

// tokenLocked sends one token on Notify's channel (non-blocking).
func (cq *completionQueue) tokenLocked() {
	select {
	case *cq.notify.Load() <- struct{}{}:
	default:
	}
}
