package initiator

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/internal/spin"
	"github.com/rdmablk/rdmablk/verbs"
)

// queueMux is the submission layer of one I/O queue, shared by any number
// of callers (DESIGN.md §3): callers push commands onto a lock-free
// intake, and the queue's goroutine (run) owns the IOQueue, takes
// commands into a local FIFO, issues up to Depth of them into its slot
// table, reaps completions and finishes each command. No caller ever owns
// the queue.
//
// The goroutine touches the qpair only while it has commands; an idle mux
// sleeps on wake and leaves the queue alone, so the raw IOQueue API stays
// usable on a controller whose multiplexed API is not in use.
//
// A Submitter's Flush may do the goroutine's work on its own goroutine
// (drive): whoever holds drive owns everything below "Owned by run", so
// the goroutine holds it except while it yields or sleeps, and Flush only
// tries it (a Flush that finds it held wakes the goroutine instead).
type queueMux struct {
	c *Controller
	q *IOQueue

	drive sync.Mutex
	// idle: the goroutine sleeps with nothing in flight, on wake only (not
	// on the CQ): whoever issues a command outside it must wake it.
	// Written with drive held.
	idle atomic.Bool

	// head is the intake: a Treiber stack pushed by any goroutine (push)
	// and taken whole by run. muxClosed marks a mux that takes nothing
	// more (its controller is dead).
	head atomic.Pointer[cmd]
	wake chan struct{} // capacity 1: "the intake is not empty"

	// Owned by run (by whoever holds drive).
	fifo, tail *cmd // commands taken, not yet issued, in order
	ios        []IO // one per slot
	cmds       []*cmd
	free       []int // free slot indices
	done       []*IO
	busy       int
	zbufs      []Buffer // per slot: the MemRegion view of a zero-copy command
	spins      int      // the adaptive spin budget of sleep (internal/spin), ≤ spinPolls

	// A Submitter whose goroutine waits for this queue's completions
	// itself (Submitter.Arm), owned by drive like the rest: owner is that
	// Submitter, and the CQ's events then make fd readable (fdn, the
	// wire's verbs.FDNotifier, detached) instead of waking run, which
	// never sleeps on the CQ while owner is set (waitOwner). claimed: the
	// owner's last Arm covers the commands in flight — it will Flush
	// when fd is readable; otherwise run asks it to Arm again (its
	// waker). key names this mux's descriptor for the owner's poll set
	// (a descriptor number can be reused after a reconnect, a key not).
	owner   *Submitter
	claimed bool
	fdn     verbs.FDNotifier
	fd      int
	key     uint64

	// Published for Stats (written by run only).
	inFlight  atomic.Int32
	completed atomic.Uint64
	copied    atomic.Uint64 // bytes copied between Request data and pool buffers
	zeroCopy  atomic.Uint64 // bytes of commands sent from/to a MemRegion or, over NVMe/TCP, written from Request data
}

// muxClosed is the intake head of a mux that takes no more commands.
var muxClosed = new(cmd)

func newQueueMux(c *Controller, q *IOQueue) *queueMux {
	d := q.Depth()
	m := &queueMux{c: c, q: q, wake: make(chan struct{}, 1), spins: spinPolls,
		ios: make([]IO, d), zbufs: make([]Buffer, d), cmds: make([]*cmd, d), free: make([]int, 0, d), done: make([]*IO, d)}
	for i := d - 1; i >= 0; i-- {
		m.free = append(m.free, i)
	}
	return m
}

// push hands x to the queue. Any goroutine; it never blocks. False when
// the mux is closed (the caller finishes x).
func (m *queueMux) push(x *cmd) bool {
	if !m.pushQuiet(x) {
		return false
	}
	m.kick()
	return true
}

// pushQuiet is push without waking the goroutine: for a Submitter, whose
// Flush issues the command or wakes the goroutine.
func (m *queueMux) pushQuiet(x *cmd) bool {
	for {
		h := m.head.Load()
		if h == muxClosed {
			return false
		}
		x.next = h
		if m.head.CompareAndSwap(h, x) {
			return true
		}
	}
}

// kick wakes the goroutine (from its idle or its armed sleep). Any
// goroutine; never blocks.
func (m *queueMux) kick() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// flush is a Submitter's Flush of this queue, on the caller's goroutine:
// if drive is free it takes the intake, issues what fits, posts it and
// finishes what has completed (completions are delivered from here), then
// wakes the goroutine if it sleeps idle while something is left for it;
// if drive is held, the holder may be past its last look at the intake,
// so it wakes the goroutine.
func (m *queueMux) flush(b *Submitter) {
	if !m.drive.TryLock() {
		m.kick()
		return
	}
	if m.owner == b {
		m.claimed = false // b arms again before it waits
	}
	m.step()
	// What is left b's Arm takes care of when b waits for completions
	// itself (a waker: it arms before it sleeps); else the goroutine, if
	// it sleeps idle, must see it.
	left := b.waker == nil && (m.busy > 0 || m.fifo != nil || m.head.Load() != nil)
	// The goroutine sleeps idle, or waits for another owner's Arm
	// (waitOwner: woken, it asks that owner to arm for what b issued).
	wake := m.idle.Load() || m.owner != nil && m.owner != b
	m.drive.Unlock()
	if left && wake {
		m.kick()
	}
}

// take moves the intake into the FIFO, oldest first. A closed intake
// stays closed: take also runs on a Flush's goroutine, possibly after
// shut, and must not reopen it for a moment (a push in that moment would
// be lost when it closes again).
func (m *queueMux) take() {
	for {
		h := m.head.Load()
		if h == nil || h == muxClosed {
			return
		}
		if m.head.CompareAndSwap(h, nil) {
			m.appendReversed(h)
			return
		}
	}
}

// appendReversed appends a LIFO list to the FIFO in reverse (push) order.
func (m *queueMux) appendReversed(h *cmd) {
	var rev *cmd
	for h != nil {
		n := h.next
		h.next = rev
		rev = h
		h = n
	}
	for rev != nil {
		n := rev.next
		rev.next = nil
		if m.tail == nil {
			m.fifo = rev
		} else {
			m.tail.next = rev
		}
		m.tail = rev
		rev = n
	}
}

func (m *queueMux) pop() *cmd {
	x := m.fifo
	m.fifo = x.next
	if m.fifo == nil {
		m.tail = nil
	}
	x.next = nil
	return x
}

func (m *queueMux) pushFront(x *cmd) {
	x.next = m.fifo
	m.fifo = x
	if m.tail == nil {
		m.tail = x
	}
}

// step takes the intake, issues what fits and finishes what completed.
// It reports how many commands completed. drive held.
func (m *queueMux) step() int {
	m.take()
	if m.fifo == nil && m.busy == 0 {
		return 0
	}
	m.issue()
	n := m.q.reap(m.done)
	if n > 0 {
		// Counted before the callers hear of them, so that a caller
		// who got its completion sees it in QueueStats (completed and
		// no longer in flight).
		m.completed.Add(uint64(n))
		m.inFlight.Store(int32(m.busy - n))
	}
	for _, io := range m.done[:n] {
		m.finish(io)
	}
	return n
}

// run is the queue's goroutine (one per I/O queue, in Controller.bg). It
// returns once the controller is dead and every command it took has been
// finished. It holds drive except while it yields or sleeps.
func (m *queueMux) run() {
	defer m.c.bg.Done()
	q := m.q
	m.drive.Lock()
	for {
		m.take()
		if m.fifo == nil && m.busy == 0 {
			if m.c.isDead() {
				m.shut()
				m.drive.Unlock()
				return
			}
			m.idle.Store(true)
			m.drive.Unlock()
			select {
			case <-m.wake:
			case <-m.c.done:
			}
			m.drive.Lock()
			m.idle.Store(false)
			continue
		}
		if n := m.step(); n > 0 || m.busy == 0 || q.q.err != nil || m.c.isDead() {
			continue
		}
		if m.owner != nil {
			m.waitOwner()
			continue
		}
		m.sleep()
	}
}

// waitOwner is run's wait while a Submitter's goroutine waits for the
// CQ (owner): the commands in flight are the owner's to reap, so run
// waits only for new intake and the controller's end — after asking the
// owner to Arm again when its last Arm does not cover them (they came
// from other callers, or the owner found nothing in flight when it
// armed). Called and returns with drive held; releases it while it
// waits.
func (m *queueMux) waitOwner() {
	var wake func()
	if !m.claimed {
		wake = m.owner.waker
	}
	m.drive.Unlock()
	if wake != nil {
		wake()
	}
	select {
	case <-m.wake:
	case <-m.c.done:
	case <-m.q.q.w.notify(): // detached, the CQ still reports an overrun here
	}
	m.drive.Lock()
}

// muxKeys numbers the descriptors muxes hand to an owner (key).
var muxKeys atomic.Uint64

// arm is Submitter.Arm on this queue: with commands in flight it makes b
// the owner (detaching the CQ's events onto its descriptor the first
// time), arms the CQ, reaps what completed before the arm (completions
// are delivered from here) and, if commands are still in flight, claims
// them and returns the descriptor and its key. Otherwise, or when the
// queue cannot be waited for on a descriptor, fd is -1 and the
// goroutine is woken for whatever is left. signalled: the descriptor was
// readable since the last arm (its event is consumed).
func (m *queueMux) arm(b *Submitter, signalled bool) (fd int, key uint64) {
	m.drive.Lock()
	fd, key = m.armLocked(b, signalled)
	left := fd < 0 && (m.busy > 0 || m.fifo != nil || m.head.Load() != nil || m.q.q.err != nil)
	m.drive.Unlock()
	if left {
		m.kick()
	}
	return fd, key
}

func (m *queueMux) armLocked(b *Submitter, signalled bool) (int, uint64) {
	// Under drive a live controller's CQ is open: teardown destroys it
	// only after run, which needs drive, has returned on a dead one.
	if m.c.isDead() || m.q.q.err != nil || m.owner != nil && m.owner != b {
		return -1, 0
	}
	if m.owner == b {
		m.claimed = false // until this Arm covers what is in flight
		if signalled {
			m.fdn.TakeNotify()
		}
	}
	if m.busy == 0 {
		if m.owner == b {
			return -1, m.key // still b's descriptor: a poll of it may stay
		}
		return -1, 0
	}
	if m.owner == nil {
		n := m.q.q.w.fdNotifier()
		if n == nil || b.waker == nil {
			return -1, 0
		}
		fd, err := n.DetachNotify()
		if err != nil {
			return -1, 0
		}
		m.owner, m.fdn, m.fd, m.key = b, n, fd, muxKeys.Add(1)
		b.owns = m // b owned no other queue: note disowns it when b's requests move here
	}
	if err := m.q.q.w.arm(); err != nil {
		m.q.q.fail(fmt.Errorf("%w: queue %d: arm CQ: %w", ErrControllerLost, m.q.q.qid, err))
		return -1, 0 // run fails what is in flight
	}
	// A completion that arrived before the arm raises no event.
	m.step()
	if m.busy == 0 || m.q.q.err != nil {
		return -1, 0
	}
	m.claimed = true
	return m.fd, m.key
}

// disown ends b's ownership: the CQ's events go back to the provider's
// delivery and run waits on the CQ again. On a dead controller there is
// nothing to give back (its CQ may already be destroyed).
func (m *queueMux) disown(b *Submitter) {
	m.drive.Lock()
	if m.owner == b {
		if !m.c.isDead() {
			_ = m.fdn.AttachNotify() // fails only on a closed CQ
		}
		m.owner, m.claimed, m.fdn = nil, false, nil
	}
	m.drive.Unlock()
	m.kick()
}

// sleep waits for a completion or a new command: a short spin, then an
// armed CQ. The spin's length adapts (internal/spin): it grows while
// spinning finds completions and shrinks when it runs out, so that a
// queue whose completions come only after it lets the CPU go (a one-CPU
// guest, a busy host) soon sleeps at once. Called and returns with drive
// held; releases it while it yields and while it sleeps.
func (m *queueMux) sleep() {
	q := m.q
	// other: a reason to return that spinning did not earn — nothing
	// left in flight (a Flush finished it while drive was released), a
	// failed queue; it leaves the spin budget as it is. completed: work
	// the spin found (a completion, new intake).
	other := func() bool { return m.busy == 0 || q.q.err != nil }
	completed := func() bool {
		return m.head.Load() != nil || q.rLen > 0 || q.q.poll() > 0 && q.rLen > 0
	}
	for k := 0; k < m.spins; k++ {
		m.drive.Unlock()
		runtime.Gosched()
		m.drive.Lock()
		if other() {
			return
		}
		if completed() {
			m.spins = spin.Next(m.spins, spinPolls, spin.Found)
			return
		}
	}
	m.spins = spin.Next(m.spins, spinPolls, spin.Slept)
	if err := q.q.w.arm(); err != nil {
		q.q.fail(fmt.Errorf("%w: queue %d: arm CQ: %w", ErrControllerLost, q.q.qid, err))
		return
	}
	// A completion that arrived before the arm raises no event.
	if other() || completed() {
		return
	}
	m.drive.Unlock()
	select {
	case <-q.q.w.notify():
	case <-m.wake:
	case <-m.c.done:
	}
	m.drive.Lock()
	m.spins = spin.Next(m.spins, spinPolls, spin.Woke)
}

// issue submits FIFO commands while slots and buffers are free.
func (m *queueMux) issue() {
	q := m.q
	for m.fifo != nil && len(m.free) > 0 {
		x := m.pop()
		if !m.fit(x) {
			x.last = m.c
			x.done(fmt.Errorf("%w: %s of %d blocks does not fit queue %d (MaxTransfer %d)", ErrInvalid, x.op, x.blocks, q.index, q.maxTransfer))
			continue
		}
		k := m.free[len(m.free)-1]
		var buf *Buffer
		if x.op == IORead || x.op == IOWrite {
			if zb := &m.zbufs[k]; m.c.extBuffer(x.data, zb) {
				buf = zb // zero copy: the SGL names the caller's memory
			} else if x.op == IOWrite && m.c.tr == TransportTCP && len(x.data) > 0 {
				// NVMe/TCP sends write data from the caller's Data (the
				// capsule or H2CData iovecs name it): the kernel's
				// sendmsg reads it, or, zero-copy, reads it until TCP has
				// it acknowledged, which the response implies
				// (wire_tcp_zc.go). Reads still land in a pool buffer: a
				// failed connection's reader may be inside a copy into
				// the buffer while a replay fills it elsewhere.
				*zb = Buffer{b: x.data, ext: true}
				buf = zb
			} else {
				b, ok := q.pool.alloc()
				if !ok { // the raw API holds buffers: wait for completions
					m.pushFront(x)
					return
				}
				buf = b
				if x.op == IOWrite {
					copy(buf.b, x.data)
					m.copied.Add(uint64(len(x.data)))
				}
			}
		}
		io := &m.ios[k]
		*io = IO{Op: x.op, NSID: x.nsid, LBA: x.lba, Blocks: uint32(x.blocks), FUA: x.fua, Buf: buf, User: uint64(k)}
		// Published before the post, so that whoever sees the command at
		// the controller sees it in QueueStats too.
		m.inFlight.Store(int32(m.busy + 1))
		err := q.live()
		if err == nil { // checked already: Session/Namespace check, fit
			err = q.post(io, len(x.data), false)
		}
		if err != nil {
			m.inFlight.Store(int32(m.busy))
			m.releaseBuf(buf)
			if err == ErrQueueFull {
				m.pushFront(x)
				return
			}
			x.last = m.c
			if err == ErrControllerLost || err == ErrClosed {
				err = m.c.failErr()
			}
			x.done(err)
			continue
		}
		m.free = m.free[:len(m.free)-1]
		m.cmds[k] = x
		m.busy++
	}
}

// fit splits x when it exceeds one command of this queue, putting the
// rest back at the front of the FIFO. False when not even one block fits.
func (m *queueMux) fit(x *cmd) bool {
	var per uint64
	switch x.op {
	case IORead, IOWrite:
		per = maxBlocksPerCommand(x.op, x.r.bs, m.q.maxTransfer)
	case IOWriteZeroes, IODeallocate:
		per = maxBlocksPerCommand(x.op, x.r.bs, m.q.maxTransfer)
	default:
		return true
	}
	if per == 0 {
		return false
	}
	if x.blocks <= per {
		return true
	}
	rest := x.r.newCmd(x.lba+per, x.blocks-per, uint64(x.r.Off)/uint64(x.r.bs))
	x.r.pending.Add(1)
	x.blocks = per
	if x.data != nil {
		x.data = x.data[:int(per)*x.r.bs]
	}
	m.pushFront(rest)
	return true
}

// finish completes the command of a reaped IO.
func (m *queueMux) finish(io *IO) {
	k := int(io.User)
	x := m.cmds[k]
	m.cmds[k] = nil
	m.free = append(m.free, k)
	m.busy--
	var err error
	if io.Err != nil {
		err = m.c.failErr()
	} else if !io.Status.OK() {
		err = statusErr(x.op.String(), io.Status)
	}
	if b := io.Buf; b != nil {
		switch {
		case b.ext:
			if err == nil {
				m.zeroCopy.Add(uint64(len(x.data)))
			}
		case err == nil && x.op == IORead:
			copy(x.data, b.b)
			m.copied.Add(uint64(len(x.data)))
		}
	}
	m.releaseBuf(io.Buf)
	if err != nil {
		x.last = m.c
	}
	x.done(err)
}

// releaseBuf gives a command's buffer back: to the pool, or (a
// MemRegion view) drops its reference to the caller's memory.
func (m *queueMux) releaseBuf(b *Buffer) {
	if b != nil && b.ext {
		b.b = nil
		return
	}
	m.q.pool.release(b)
}

// shut closes the intake and fails every command it still holds with
// the controller's error. Called by run once the controller is dead and
// nothing is in flight.
func (m *queueMux) shut() {
	h := m.head.Swap(muxClosed)
	m.appendReversed(h)
	err := m.c.failErr()
	for m.fifo != nil {
		x := m.pop()
		x.last = m.c
		x.done(err)
	}
	m.inFlight.Store(0)
}

// route hands x to one of the controller's queues (Request.Queue, else
// round robin), waking its goroutine unless a Submitter routes x (its
// Flush does). It never blocks; on a dead controller x is finished with
// its error.
func (c *Controller) route(x *cmd) {
	if len(c.muxes) == 0 {
		x.last = c
		x.done(fmt.Errorf("%w: controller has no I/O queues", ErrNotSupported))
		return
	}
	var i uint32
	if q := x.r.Queue; q > 0 {
		i = uint32(q-1) % uint32(len(c.muxes))
	} else {
		i = c.rr.Add(1) % uint32(len(c.muxes))
	}
	m := c.muxes[i]
	if sub := x.sub; sub != nil {
		x.sub = nil
		if m.pushQuiet(x) {
			sub.note(m)
			return
		}
	} else if m.push(x) {
		return
	}
	x.last = c
	x.done(c.failErr())
}

// failErr is the error of a command failed by a dead controller: ErrClosed
// after Close, else the loss cause (wrapping ErrControllerLost).
func (c *Controller) failErr() error {
	if err := c.Err(); err != nil {
		return err
	}
	return ErrControllerLost
}

// startMuxes starts one submission goroutine per I/O queue (Connect).
func (c *Controller) startMuxes() {
	c.muxes = make([]*queueMux, len(c.queues))
	for i, q := range c.queues {
		c.muxes[i] = newQueueMux(c, q)
	}
	for _, m := range c.muxes {
		c.bg.Add(1)
		go m.run()
	}
}

// QueueStats is a snapshot of one I/O queue's multiplexed use.
type QueueStats struct {
	Depth     int    // slots in the queue's slot table
	InFlight  int    // commands in the queue's slot table now
	Completed uint64 // commands completed through the multiplexed API
}

// QueueStats returns the per-queue counters of the multiplexed API. Any
// goroutine; it does not block.
func (c *Controller) QueueStats() []QueueStats {
	out := make([]QueueStats, len(c.muxes))
	for i, m := range c.muxes {
		out[i] = QueueStats{Depth: m.q.Depth(), InFlight: int(m.inFlight.Load()), Completed: m.completed.Load()}
	}
	return out
}
