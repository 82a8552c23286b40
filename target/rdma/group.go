package rdma

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/internal/spin"
	"github.com/rdmablk/rdmablk/verbs"
)

// pollGroup is one poller goroutine that owns many queues (SPDK's poll
// group, DESIGN.md §3). A queue is assigned to the group with the fewest
// queues when its connection is set up and stays there until it dies;
// its QP, CQ and slots are then owned by the group goroutine.
//
// One pass steps every queue of the group once: control events, its CQ,
// the completions the core handed back, waiting requests, and one
// PostRecv and one PostSend per queue with everything the pass produced for
// it. While passes find work the group keeps passing; after an adaptive
// number of empty passes (spin.Next) it arms the CQs (queue.arm: the
// send CQ only when something waits for it), passes once more,
// and sleeps on its bell. Everything that needs the group rings the bell:
// QueueConn.Complete (after queueing the slot on the queue's completion
// channel, so a backend completion reaches the group without a goroutine
// hand-off), an armed CQ's notification and the queue's control events
// (through one parked watcher goroutine per queue, which only runs when the
// group is asleep or an event happens), and new queues. A queue that dies or
// finishes its drain leaves the group and is torn down on a goroutine of
// its own, so a slow teardown (waiting for flushes or the core) never
// holds up the group's other queues.
type pollGroup struct {
	l    *Listener
	bell chan struct{} // capacity 1
	stop chan struct{} // closed by Listener.Close after every queue is gone
	done chan struct{} // closed when the goroutine returned

	mu       sync.Mutex // guards incoming, load and calls
	incoming []*queue
	load     int // queues assigned and not yet torn down
	// calls run on the group goroutine at its next pass (tests inspect
	// queue state there, where it is owned).
	calls []func(qs []*queue)
	// news is set while incoming or calls hold something, so a pass need
	// not take mu to find out.
	news atomic.Bool

	queues []*queue // group goroutine only

	// ew is set when the group sleeps in epoll_wait (Config.PollWait,
	// groupwait_linux.go); nil: it sleeps on bell.
	ew *epollWaiter

	// spins counts the group's yielding empty passes (Stats.Spins). The
	// group's own counter, written only by its goroutine: spinning groups
	// do not share a cache line.
	spins atomic.Uint64
	// cleanSkips counts steps that polled neither of a clean queue's CQs
	// (Stats.CleanSkips, clean.go); the group's own counter, as spins.
	cleanSkips atomic.Uint64

	// afterArm is set during the pass that follows the group's arm
	// (clean.go); group goroutine only.
	afterArm bool
}

// Control event bits of a queue (queue.ctl), set by its watcher or
// timers, taken by the group goroutine.
const (
	ctlKill = 1 << iota
	ctlConnDone
	ctlDrain
	ctlDrainTimeout
	ctlConnectTimeout
)

func newPollGroup(l *Listener) *pollGroup {
	g := &pollGroup{l: l, bell: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if l.cfg.PollWait != PollWaitChannel {
		ew, err := newEpollWaiter()
		if err == nil {
			g.ew = ew
			nbsys.ReserveP(1) // its raw waits keep a P (groupwait_linux.go)
		} else if !errors.Is(err, errors.ErrUnsupported) {
			l.log.Warn("rdma: poll group sleeps on a channel", "err", err)
		}
	}
	go g.run()
	return g
}

// ring wakes the group goroutine; never blocks; any goroutine.
func (g *pollGroup) ring() {
	if g.ew != nil {
		g.ew.ring()
		return
	}
	select {
	case g.bell <- struct{}{}:
	default:
	}
}

// pickGroup returns the group with the fewest queues and counts q on it.
func (l *Listener) pickGroup() *pollGroup {
	var best *pollGroup
	bestLoad := 0
	for _, g := range l.groups {
		g.mu.Lock()
		n := g.load
		g.mu.Unlock()
		if best == nil || n < bestLoad {
			best, bestLoad = g, n
		}
	}
	best.mu.Lock()
	best.load++
	best.mu.Unlock()
	return best
}

// add hands a set-up queue to the group (the setup goroutine calls it
// once; the group owns the queue from its next pass).
func (g *pollGroup) add(q *queue) {
	q.g = g
	if q.l.cfg.ConnectTimeout > 0 && !q.connected {
		q.connTimer = time.AfterFunc(q.l.cfg.ConnectTimeout, func() { q.signal(ctlConnectTimeout) })
	}
	// CQ events ring the group's bell directly where the provider allows
	// (verbs.NotifyRouter); otherwise the watcher relays them. A group that
	// sleeps in epoll_wait takes them from its epoll set instead (adopt).
	rr, ok1 := q.cq.(verbs.NotifyRouter)
	sr, ok2 := q.scq.(verbs.NotifyRouter)
	if g.ew == nil && ok1 && ok2 {
		rr.RouteNotify(g.bell)
		sr.RouteNotify(g.bell)
		q.routed = true
	}
	q.initQuiet()
	q.initClean()
	q.watchStop = make(chan struct{})
	q.watchDone = make(chan struct{})
	go q.watch()
	g.mu.Lock()
	g.incoming = append(g.incoming, q)
	g.news.Store(true)
	g.mu.Unlock()
	g.ring()
}

// signal records control events for the group and rings it.
func (q *queue) signal(bits uint32) {
	q.ctl.Or(bits)
	q.g.ring()
}

// watch turns the queue's control channels (and CQ notifications, where
// they cannot be routed to the bell) into control bits and bells. It is parked in select almost always.
func (q *queue) watch() {
	defer close(q.watchDone)
	kill, done, drain := q.killCh, q.id.Done(), q.drainCh
	rnotify, snotify := q.cq.Notify(), q.scq.Notify()
	if q.routed {
		rnotify, snotify = nil, nil // they ring the bell themselves
	}
	for {
		select {
		case <-rnotify:
			q.g.ring()
		case <-snotify:
			q.g.ring()
		case <-kill:
			kill = nil
			q.signal(ctlKill)
		case <-done:
			done = nil
			q.signal(ctlConnDone)
		case <-drain:
			drain = nil
			q.signal(ctlDrain)
		case <-q.watchStop:
			return
		}
	}
}

// control acts on the control events recorded since the last pass.
func (q *queue) control() {
	c := q.ctl.Swap(0)
	if c == 0 {
		return
	}
	if c&ctlConnectTimeout != 0 {
		q.connectTimedOut()
	}
	if c&ctlKill != 0 {
		q.fatal("closed by the target core", nil)
	}
	if c&ctlConnDone != 0 {
		q.fatal("connection ended", q.id.Err())
	}
	if c&ctlDrain != 0 && !q.draining {
		q.startDrain()
		q.drainTimer = time.AfterFunc(q.l.cfg.DrainTimeout, func() { q.signal(ctlDrainTimeout) })
	}
	if c&ctlDrainTimeout != 0 {
		q.fatal("drain timed out", errDrainTimeout)
	}
}

// pass runs one poll of q: control events, then a step. It reports work.
func (q *queue) pass() bool {
	if q.ctl.Load() != 0 {
		q.control()
	}
	if q.dying {
		return true
	}
	if q.skip() {
		return false
	}
	worked := q.step()
	return q.settle(worked) || worked
}

// finished reports that q leaves its group: it died or finished its drain.
func (q *queue) finished() bool { return q.dying || (q.draining && q.drained()) }

// run is the group goroutine.
func (g *pollGroup) run() {
	defer close(g.done)
	locked := g.l.cfg.LockPollerThreads != nil && *g.l.cfg.LockPollerThreads
	if locked {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	limit := max(g.l.cfg.PollSpins, 0)
	budget, spins := limit, 0
	for {
		g.adopt()
		worked := g.passAll()
		if worked {
			if spins > 0 {
				budget = spin.Next(budget, limit, spin.Found)
			}
			spins = 0
			continue
		}
		if spins < budget {
			spins++
			g.spins.Add(1)
			if !locked {
				runtime.Gosched()
			}
			continue
		}
		budget = spin.Next(budget, limit, spin.Slept)
		if g.ew != nil {
			// A ring from here on keeps the group awake; what rang before
			// is found by the adopt and the pass below, and sleep looks at
			// stop (the channel bell keeps its token instead).
			g.ew.disarm()
			if g.news.Load() {
				continue
			}
		}
		for _, q := range g.queues {
			if q.quiet.on {
				// Armed when it went quiet; arming it again here could
				// find a completion its spent arm announced (ibverbs
				// probes with a poll and keeps the arm) and leave it
				// looking armed with that completion unpolled.
				continue
			}
			if err := q.arm(); err != nil {
				q.fatal("arming the CQ", err)
			}
		}
		g.afterArm = true
		worked = g.passAll()
		g.afterArm = false
		if worked {
			spins = 0
			continue
		}
		if g.sleep() {
			return
		}
		budget = spin.Next(budget, limit, spin.Woke)
		spins = 0
	}
}

// sleep waits for a ring or a CQ event; it reports that the group ends
// (stopped with no queues left).
func (g *pollGroup) sleep() bool {
	if g.ew == nil {
		select {
		case <-g.bell:
			return false
		case <-g.stop:
			return g.stopped()
		}
	}
	select {
	case <-g.stop:
		return g.stopped()
	default:
	}
	if err := g.ew.sleep(); err != nil {
		// Cannot happen with a valid epoll set; never spin on it.
		g.l.log.Error("rdma: poll group wait failed", "err", err)
		time.Sleep(time.Millisecond)
	}
	select {
	case <-g.stop:
		return g.stopped()
	default:
		return false
	}
}

// stopped adopts what is left after Listener.Close stopped the group and
// reports whether it ends (no queues).
func (g *pollGroup) stopped() bool {
	g.adopt()
	if len(g.queues) != 0 {
		return false
	}
	if g.ew != nil {
		g.ew.close()
		nbsys.ReleaseP(1)
	}
	return true
}

// attachCQs moves q's CQ events to the group's epoll set where the
// provider allows (verbs.FDNotifier); a CQ that cannot be attached keeps
// delivering through the watcher.
func (g *pollGroup) attachCQs(q *queue) {
	for i, cq := range []verbs.CompletionQueue{q.cq, q.scq} {
		if i == 1 && q.scq == q.cq {
			break
		}
		n, ok := cq.(verbs.FDNotifier)
		if !ok {
			continue
		}
		if err := g.ew.attach(n); err != nil {
			q.log.Debug("rdma: CQ events stay on their channel", "err", err)
			continue
		}
		q.fdCQs = append(q.fdCQs, n)
	}
}

// detachCQs gives q's CQ events back to their provider before its
// teardown waits on them.
func (g *pollGroup) detachCQs(q *queue) {
	for _, n := range q.fdCQs {
		if err := g.ew.detach(n); err != nil {
			q.log.Warn("rdma: re-attaching CQ events", "err", err)
		}
	}
	q.fdCQs = nil
}

// adopt takes the queues handed to the group since the last pass.
func (g *pollGroup) adopt() {
	if !g.news.Load() {
		return
	}
	g.mu.Lock()
	in, calls := g.incoming, g.calls
	g.incoming, g.calls = nil, nil
	g.news.Store(false)
	g.mu.Unlock()
	g.queues = append(g.queues, in...)
	if g.ew != nil {
		for _, q := range in {
			g.attachCQs(q)
		}
	}
	for _, f := range calls {
		f(g.queues)
	}
}

// inspect runs f on the group goroutine with the group's queues and waits
// for it (tests).
func (g *pollGroup) inspect(f func(qs []*queue)) {
	done := make(chan struct{})
	g.mu.Lock()
	g.calls = append(g.calls, func(qs []*queue) { f(qs); close(done) })
	g.news.Store(true)
	g.mu.Unlock()
	g.ring()
	<-done
}

// passAll passes every queue once and releases those that finished. It
// reports work (a finished queue counts).
func (g *pollGroup) passAll() bool {
	worked := false
	for i := 0; i < len(g.queues); {
		q := g.queues[i]
		if q.pass() {
			worked = true
		}
		if q.finished() {
			last := len(g.queues) - 1
			g.queues[i] = g.queues[last]
			g.queues[last] = nil
			g.queues = g.queues[:last]
			g.detachCQs(q)
			go q.finish()
			worked = true
			continue
		}
		i++
	}
	return worked
}

// finish tears q down on its own goroutine once it left its group.
func (q *queue) finish() {
	defer q.l.wg.Done()
	// The watcher must be gone before teardown waits on the CQ's
	// notifications itself.
	close(q.watchStop)
	<-q.watchDone
	if q.connTimer != nil {
		q.connTimer.Stop()
	}
	if q.drainTimer != nil {
		q.drainTimer.Stop()
	}
	q.teardown()
	g := q.g
	g.mu.Lock()
	g.load--
	g.mu.Unlock()
}
