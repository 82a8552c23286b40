//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmablk/rdmablk/internal/idmap"
	"github.com/rdmablk/rdmablk/verbs"
)

// cq is ibv_cq with its own completion channel. A goroutine parked in the
// poller (see evfd) turns channel events into Notify tokens; ReqNotify arms
// the CQ with ibv_req_notify_cq. Poll is one cgo call for up to len(wc)
// completions, written straight into the caller's slice.
type cq struct {
	dev     *device
	cq      *C.struct_ibv_cq
	ch      *C.struct_ibv_comp_channel
	efd     *evfd
	handle  uintptr
	depth   int
	own     chan struct{}                 // the CQ's own event channel
	notify  atomic.Pointer[chan struct{}] // where tokens go (own unless routed)
	stopped chan struct{}                 // closed when eventLoop returned
	// detached: eventLoop is stopped and the consumer takes the channel's
	// events itself (verbs.FDNotifier); efd and stopped are replaced by
	// AttachNotify. Consumer-serialized, see FDNotifier.
	detached bool

	overrun atomic.Bool

	// armed: ibv_req_notify_cq was called and the event it arms has not
	// been taken by eventLoop yet. While it holds, the kernel CQ is armed
	// or an event is on its way to a token, so ReqNotify need not make
	// the system call again (rxe: one uverbs write per call). eventLoop
	// clears it before it sends the token, so the consumer's ReqNotify
	// after that wake-up arms for real.
	armed atomic.Bool

	// ReqNotify on a CQ that already holds completions must signal at
	// once (verbs contract); ibv_req_notify_cq does not, so ReqNotify
	// polls one completion into stash to find out, and Poll hands it out
	// first.
	stashMu sync.Mutex // guards stash
	stash   verbs.WorkCompletion
	stashed atomic.Bool

	mu     sync.Mutex // guards qps and closed
	qps    map[*queuePair]struct{}
	closed bool

	// byNum maps QP numbers to the QPs on this CQ, for queue accounting
	// in Poll (usually one QP: no map lookup); replaced (copy on write)
	// under mu.
	byNum atomic.Pointer[idmap.Map[uint32, *queuePair]]
}

// index adds q to byNum once its number is known.
func (c *cq) index(q *queuePair) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[uint32]*queuePair{}
	if old := c.byNum.Load(); old != nil {
		m = old.Clone()
	}
	m[q.num] = q
	c.byNum.Store(idmap.New(m))
}

// account retires the work requests the completions report (account.go).
func (c *cq) account(wcs []verbs.WorkCompletion) {
	m := c.byNum.Load()
	if m == nil {
		return
	}
	// A poll's completions mostly come from one QP: look each number up
	// once per run of it.
	var q *queuePair
	num, known := uint32(0), false
	for i := range wcs {
		w := &wcs[i]
		if !known || w.QPNum != num {
			q, num, known = m.Get(w.QPNum), w.QPNum, true
		}
		if q == nil {
			continue
		}
		switch {
		case q.scq != q.rcq && c == q.scq:
			q.sq.retire(w.ID)
		case q.scq != q.rcq:
			q.rq.retire(w.ID)
		case w.Opcode&verbs.WCRecv != 0:
			q.rq.retire(w.ID)
		case !q.sq.retire(w.ID):
			q.rq.retire(w.ID)
		}
	}
}

func newCQ(d *device, cqe, vector int) (*cq, error) {
	ch := C.ibv_create_comp_channel(d.ctx)
	if ch == nil {
		return nil, fmt.Errorf("ibverbs: ibv_create_comp_channel on %s failed", d.name)
	}
	c := &cq{dev: d, ch: ch, own: make(chan struct{}, 1), stopped: make(chan struct{}),
		qps: map[*queuePair]struct{}{}}
	c.notify.Store(&c.own)
	c.handle = cqHandles.Add(1)
	d.c.addCQ(c)
	c.cq = C.rb_create_cq(d.ctx, C.int(cqe), C.uintptr_t(c.handle), ch, C.int(vector))
	if c.cq == nil {
		c.forget()
		C.ibv_destroy_comp_channel(ch)
		return nil, fmt.Errorf("%w: ibv_create_cq(%d) on %s failed", verbs.ErrInvalid, cqe, d.name)
	}
	c.depth = int(c.cq.cqe)
	efd, err := newEvfd(ch.fd, d.name+" cq")
	if err != nil {
		C.ibv_destroy_cq(c.cq)
		C.ibv_destroy_comp_channel(ch)
		c.forget()
		return nil, err
	}
	c.efd = efd
	go c.eventLoop()
	return c, nil
}

func (c *cq) forget() { c.dev.c.removeCQ(c) }

func (c *cq) eventLoop() {
	defer close(c.stopped)
	// Made once: a closure per event would allocate on the CQ's hot path.
	try := func(uintptr) bool { return C.rb_get_cq_event(c.ch) == 0 }
	for {
		err := c.efd.wait(try)
		if err != nil {
			return
		}
		c.armed.Store(false)
		c.token()
	}
}

func (c *cq) token() {
	select {
	case *c.notify.Load() <- struct{}{}:
	default:
	}
}

// overran handles IBV_EVENT_CQ_ERR: the CQ is unusable and, as the verbs
// contract says, so is every QP on it (providers such as rxe leave the
// QPs running; we move them to the error state so their work flushes).
func (c *cq) overran() {
	c.overrun.Store(true)
	// No event will follow: an arm that still looked held would let a
	// consumer skip the poll that reports the overrun (ArmReporter).
	c.armed.Store(false)
	c.mu.Lock()
	qps := make([]*queuePair, 0, len(c.qps))
	for q := range c.qps {
		qps = append(qps, q)
	}
	c.mu.Unlock()
	for _, q := range qps {
		q.toError()
	}
	c.token()
}

func (c *cq) Poll(wc []verbs.WorkCompletion) (int, error) {
	if c.overrun.Load() {
		return 0, fmt.Errorf("%w", verbs.ErrCQOverrun)
	}
	if len(wc) == 0 {
		return 0, nil
	}
	k := 0
	if c.stashed.Load() {
		c.stashMu.Lock()
		if c.stashed.Load() {
			wc[0] = c.stash
			c.stashed.Store(false)
			k = 1
		}
		c.stashMu.Unlock()
		if k == len(wc) {
			c.account(wc[:k])
			return k, nil
		}
	}
	n := C.rb_poll(c.cq, (*C.struct_rb_wc)(unsafe.Pointer(&wc[k])), C.int(len(wc)-k))
	if n < 0 {
		if k > 0 {
			c.account(wc[:k])
			return k, nil
		}
		return 0, fmt.Errorf("%w: ibv_poll_cq failed", verbs.ErrCQOverrun)
	}
	c.account(wc[:k+int(n)])
	return k + int(n), nil
}

func (c *cq) ReqNotify() error {
	if c.armed.Load() {
		// Still armed (see armed): every completion since the arm either
		// was stashed then or raises the pending event.
		return nil
	}
	c.armed.Store(true)
	if e := C.ibv_req_notify_cq(c.cq, 0); e != 0 {
		c.armed.Store(false)
		return errnoErr("ibv_req_notify_cq", e)
	}
	if c.detached {
		// Detached (verbs.FDNotifier): the consumer polls after arming,
		// so the probe for completions already queued is not needed.
		return nil
	}
	pending := c.stashed.Load()
	if !pending {
		c.stashMu.Lock()
		if !c.stashed.Load() && C.rb_poll(c.cq, (*C.struct_rb_wc)(unsafe.Pointer(&c.stash)), 1) == 1 {
			c.stashed.Store(true)
		}
		pending = c.stashed.Load()
		c.stashMu.Unlock()
	}
	if pending {
		c.token()
	}
	return nil
}

var (
	_ verbs.NotifyRouter = (*cq)(nil)
	_ verbs.FDNotifier   = (*cq)(nil)
	_ verbs.ArmReporter  = (*cq)(nil)
)

// Armed implements verbs.ArmReporter (see armed).
func (c *cq) Armed() bool { return c.armed.Load() }

// DetachNotify implements verbs.FDNotifier: eventLoop stops, and the
// completion channel's descriptor (non-blocking since newCQ) is the
// consumer's to wait on.
func (c *cq) DetachNotify() (int, error) {
	if c.detached {
		return int(c.ch.fd), nil
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return -1, fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	c.efd.close()
	<-c.stopped
	c.detached = true
	return int(c.ch.fd), nil
}

// TakeNotify implements verbs.FDNotifier: one ibv_get_cq_event (and its
// ack), as eventLoop would.
func (c *cq) TakeNotify() bool {
	if !c.detached || C.rb_get_cq_event(c.ch) != 0 {
		return false
	}
	c.armed.Store(false)
	return true
}

// AttachNotify implements verbs.FDNotifier: a new evfd and eventLoop; an
// event still pending is taken by eventLoop's first try.
func (c *cq) AttachNotify() error {
	if !c.detached {
		return nil
	}
	efd, err := newEvfd(c.ch.fd, c.dev.name+" cq")
	if err != nil {
		return err
	}
	c.efd, c.stopped, c.detached = efd, make(chan struct{}), false
	go c.eventLoop()
	return nil
}

func (c *cq) Notify() <-chan struct{} { return *c.notify.Load() }

// RouteNotify implements verbs.NotifyRouter.
func (c *cq) RouteNotify(ch chan struct{}) {
	if ch == nil {
		ch = c.own
	}
	c.notify.Store(&ch)
}
func (c *cq) Depth() int { return c.depth }

func (c *cq) attach(q *queuePair) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	c.qps[q] = struct{}{}
	return nil
}

func (c *cq) detach(q *queuePair) {
	c.mu.Lock()
	delete(c.qps, q)
	if old := c.byNum.Load(); old != nil && old.Get(q.num) == q {
		m := old.Clone()
		delete(m, q.num)
		c.byNum.Store(idmap.New(m))
	}
	c.mu.Unlock()
}

func (c *cq) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return verbs.ErrClosed
	}
	if len(c.qps) > 0 {
		n := len(c.qps)
		c.mu.Unlock()
		return fmt.Errorf("%w: completion queue still used by %d QPs", verbs.ErrInvalid, n)
	}
	c.closed = true
	c.mu.Unlock()
	if !c.detached {
		c.efd.close()
		<-c.stopped
	}
	c.forget()
	if e := C.ibv_destroy_cq(c.cq); e != 0 {
		return errnoErr("ibv_destroy_cq", e)
	}
	if e := C.ibv_destroy_comp_channel(c.ch); e != 0 {
		return errnoErr("ibv_destroy_comp_channel", e)
	}
	return nil
}
