package ublk

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev/uring"
	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// qring is a queue's io_uring as the queue uses it: the kernel's (kring)
// or, in tests, a fake kernel. Only the queue goroutine calls next,
// submit, reap and close; wake is called from any goroutine.
type qring interface {
	// next returns the next free submission entry, zeroed, or nil if the
	// SQ is full.
	next() *uring.SQE128
	// submit hands the prepared entries to the kernel; with wait it then
	// blocks until a completion is available or wake is called (it may
	// also return early, spuriously).
	submit(wait bool) error
	// reap consumes available completions into out (never the ring's own
	// wake-up entries) and returns how many.
	reap(out []uring.CQE) int
	// wake makes a concurrent or the next submit(true) return.
	wake()
	// poll arms a one-shot wait, ended by submit(true), for fd readable
	// (the backend's descriptor, Waiter), named key, unless one is armed
	// for key already (one for another key is cancelled). False when the
	// SQ had no room. pollResult reports and clears whether the armed
	// poll fired or failed since the last call.
	poll(fd int, key uint64) bool
	pollResult() (fired, failed bool)
	// cancelPoll cancels the armed poll, if any (best effort: with the SQ
	// full it stays until a later call).
	cancelPoll()
	// closeRing closes the io_uring instance (the kernel cancels the
	// queue's commands); closeWaker releases what wake uses, once no
	// completion can call wake any more.
	closeRing() error
	closeWaker() error
}

// tagState is where one tag (one request slot of a ublk queue) is.
type tagState uint8

const (
	// tagIdle: not handed to the kernel yet (before the first FETCH_REQ).
	tagIdle tagState = iota
	// tagFetching: FETCH_REQ or COMMIT_AND_FETCH_REQ is with the kernel,
	// which completes it when a block request arrives for this tag (or
	// with ABORT when the queue goes away). slot.buf is the buffer the
	// kernel was given for that request.
	tagFetching
	// tagExecuting: the request is with the backend; Complete ends it.
	tagExecuting
	// tagCommitPending: the result is known; COMMIT_AND_FETCH_REQ waits
	// for a free submission entry.
	tagCommitPending
	// tagAborted: the kernel ended the tag (ABORT, or an error on our
	// command); the queue does not use it again.
	tagAborted
)

func (s tagState) String() string {
	switch s {
	case tagIdle:
		return "idle"
	case tagFetching:
		return "fetching"
	case tagExecuting:
		return "executing"
	case tagCommitPending:
		return "commit-pending"
	case tagAborted:
		return "aborted"
	}
	return "tagState?"
}

type tagSlot struct {
	state tagState
	buf   []byte // the tag's buffer (Buffer(tag), fixed at FETCH_REQ)
	req   Request
	res   int32 // result to commit (tagCommitPending)
}

type completion struct {
	tag   uint16
	errno syscall.Errno
}

// userData of the queue's commands: the tag in the low 16 bits.
const tagMask = 0xffff

// queue serves one ublk queue: one goroutine, locked to its OS thread (the
// driver accepts a queue's commands only from the task that issued its
// first FETCH_REQs), with its own ring.
type queue struct {
	id     uint16
	charFD int32
	ring   qring
	descs  []byte // the kernel's descriptor array for this queue (read-only)
	lim    *limits
	maxIO  uint32 // max_io_buf_bytes: every buffer holds this much
	bq     BackendQueue
	fl     Flusher // bq's, or nil (setBackend)
	wt     Waiter  // bq's, or nil; dropped (Release) when its descriptor cannot be waited for
	slots  []tagSlot
	cqes   []uring.CQE

	done   *compRing     // backend → queue (compring.go)
	posted atomic.Uint64 // completions pushed on done
	// closing: the queue goroutine has stopped serving and waits for the
	// requests still with the backend; Complete then also sends on
	// closed, which that wait blocks on. closed has room for depth tokens
	// (at most depth Completes come after closing), so no send is ever
	// dropped and each token's send happens before its receive.
	closing  atomic.Bool
	closed   chan struct{}
	taken    uint64      // completions received (queue goroutine)
	sleeping atomic.Bool // the queue goroutine is (about to be) in submit(true)
	nudged   atomic.Bool // Wake since the loop's start: loop again before sleeping
	killed   atomic.Bool

	wakeMu      sync.Mutex // guards wakerClosed and calls of ring.wake
	wakerClosed bool

	tid atomic.Int32 // the queue goroutine's OS thread (Linux thread id)

	// yield takes the locked loop through the scheduler before the
	// runtime's monitor would preempt it (nbsys.Yielder).
	yield nbsys.Yielder

	pending  []uint16 // tags in tagCommitPending, in order
	inflight int      // tags in tagExecuting
	aborted  int      // tags in tagAborted
	err      error    // first queue-fatal error

	// Counters for Stats (written by the queue goroutine only).
	nRequests atomic.Uint64
	nErrors   atomic.Uint64
	nInflight atomic.Int64
}

func newQueue(id uint16, depth int, charFD int32, ring qring, descs []byte, lim *limits, maxIO uint32) *queue {
	return &queue{
		id: id, charFD: charFD, ring: ring, descs: descs, lim: lim, maxIO: maxIO,
		slots:   make([]tagSlot, depth),
		cqes:    make([]uring.CQE, 2*depth+2),
		done:    newCompRing(depth),
		closed:  make(chan struct{}, depth),
		pending: make([]uint16, 0, depth),
	}
}

// setBackend attaches the queue's backend queue (before run).
func (q *queue) setBackend(bq BackendQueue) {
	q.bq = bq
	q.fl, _ = bq.(Flusher)
	q.wt, _ = bq.(Waiter)
}

// arm lets a Waiter backend prepare its descriptor and arms the ring's
// poll of it; false when the poll could not be armed (no SQ room: the
// queue must not sleep yet). A descriptor the kernel refused to poll
// ends the Waiter's use: its own goroutines report completions from
// then on.
func (q *queue) arm() bool {
	if q.wt == nil {
		return true
	}
	fired, failed := q.ring.pollResult()
	if failed {
		q.release()
		return true
	}
	fd, key := q.wt.Arm(fired)
	switch {
	case fd >= 0:
		return q.ring.poll(fd, key)
	case key == 0:
		// No descriptor now (a dead or other path): a poll of the old
		// one would pin its file, or watch whatever reuses its number.
		q.ring.cancelPoll()
	}
	return true
}

// release ends a Waiter's use of the ring (the queue stops serving, or
// cannot poll its descriptor).
func (q *queue) release() {
	if q.wt != nil {
		q.wt.Release()
		q.wt = nil
	}
}

// flush hands the backend what this loop submitted (Flusher).
func (q *queue) flush() {
	if q.fl != nil {
		q.fl.Flush()
	}
}

// Complete implements Completer for the queue's backend.
func (q *queue) Complete(tag uint16, errno syscall.Errno) {
	q.done.push(completion{tag, errno}) // never blocks: at most depth in flight
	q.posted.Add(1)
	if q.sleeping.Load() && q.sleeping.CompareAndSwap(true, false) {
		q.wake()
	}
	if q.closing.Load() {
		q.closed <- struct{}{} // never blocks: room for depth
	}
}

// Wake implements Waker for the queue's backend: the queue goroutine
// loops (Flush, Arm) before it sleeps again.
func (q *queue) Wake() {
	q.nudged.Store(true)
	if q.sleeping.Load() && q.sleeping.CompareAndSwap(true, false) {
		q.wake()
	}
}

// wake wakes the queue goroutine unless its waker is already closed (a
// late waker must not write to a file descriptor that may be reused).
func (q *queue) wake() {
	q.wakeMu.Lock()
	if !q.wakerClosed {
		q.ring.wake()
	}
	q.wakeMu.Unlock()
}

// kill makes the queue goroutine drop everything at once, as a crashed
// server would: no more commits; its ring is closed, so the kernel
// cancels the queue's commands and requeues their requests.
func (q *queue) kill() {
	q.killed.Store(true)
	q.wake()
}

// buffer asks the backend for tag's buffer (once per tag, at FETCH_REQ)
// and checks it can take a whole request (the kernel copies up to
// max_io_buf_bytes into it).
func (q *queue) buffer(tag uint16) []byte {
	b := q.bq.Buffer(tag)
	if uint64(len(b)) < uint64(q.maxIO) {
		panic(fmt.Sprintf("ublk: queue %d: backend buffer for tag %d has %d bytes, need %d", q.id, tag, len(b), q.maxIO))
	}
	return b
}

func bufAddr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// prepIO fills an SQE with FETCH_REQ or COMMIT_AND_FETCH_REQ for tag.
// It returns false when the SQ is full.
func (q *queue) prepIO(op uint32, tag uint16, result int32) bool {
	e := q.ring.next()
	if e == nil {
		return false
	}
	s := &q.slots[tag]
	// FETCH_REQ arms an idle tag; COMMIT_AND_FETCH_REQ ends an executing
	// (or commit-pending) one. Anything else is a bug in this file.
	if ok := (op == uIOFetchReq) == (s.state == tagIdle) && s.state != tagFetching && s.state != tagAborted; !ok {
		panic(fmt.Sprintf("ublk: queue %d tag %d: %s in state %v", q.id, tag, cmdName(op), s.state))
	}
	if op == uIOFetchReq {
		// The tag's buffer for the life of the queue: the driver copies a
		// read's data out of the address given with COMMIT_AND_FETCH_REQ
		// (it stores that address before completing the request), so the
		// commit must name the buffer the backend filled — the same one.
		s.buf = q.buffer(tag)
	}
	e.Opcode = uring.OpURingCmd
	e.FD = q.charFD
	e.SetCmdOp(op)
	e.UserData = uint64(tag)
	encodeIOCmd(e.Cmd[:], q.id, tag, result, bufAddr(s.buf))
	s.state = tagFetching
	return true
}

// commit ends tag's request with res and re-arms the tag.
func (q *queue) commit(tag uint16, res int32) {
	s := &q.slots[tag]
	if res < 0 {
		q.nErrors.Add(1)
	}
	q.nRequests.Add(1)
	if len(q.pending) > 0 || !q.prepIO(uIOCommitAndFetchReq, tag, res) {
		s.state, s.res = tagCommitPending, res
		q.pending = append(q.pending, tag)
	}
}

// flushPending prepares the commits that waited for SQ space.
func (q *queue) flushPending() {
	n := 0
	for _, tag := range q.pending {
		if !q.prepIO(uIOCommitAndFetchReq, tag, q.slots[tag].res) {
			break
		}
		n++
	}
	q.pending = q.pending[:copy(q.pending, q.pending[n:])]
}

// drain takes the backend's completions and commits them.
func (q *queue) drain() {
	for {
		c, ok := q.done.pop()
		if !ok {
			return
		}
		q.taken++
		if int(c.tag) >= len(q.slots) || q.slots[c.tag].state != tagExecuting {
			panic(fmt.Sprintf("ublk: queue %d: backend completed tag %d, which is not executing", q.id, c.tag))
		}
		s := &q.slots[c.tag]
		q.inflight--
		q.nInflight.Add(-1)
		res := int32(0)
		switch {
		case c.errno != 0:
			res = -int32(c.errno)
		case s.req.Op == OpRead || s.req.Op == OpWrite:
			res = int32(s.req.Length) // ≤ max_io_buf_bytes < 2^31
		}
		s.req.Data = nil
		q.commit(c.tag, res)
	}
}

// handle processes one completion of our FETCH/COMMIT commands: a new
// request for the tag, or the end of the tag.
func (q *queue) handle(c *uring.CQE) {
	tag := uint16(c.UserData & tagMask)
	if int(tag) >= len(q.slots) || c.UserData > tagMask || q.slots[tag].state != tagFetching {
		q.fail(fmt.Errorf("ublk: queue %d: completion for tag %d (user_data %#x) not fetching", q.id, tag, c.UserData))
		return
	}
	s := &q.slots[tag]
	switch {
	case c.Res == ioResOK:
		off := int(tag) * ioDescSize
		d := decodeIODesc(q.descs[off : off+ioDescSize])
		s.state = tagExecuting // the request is ours until committed
		if errno := parseRequest(d, q.lim, s.buf, &s.req); errno != 0 {
			q.commit(tag, -int32(errno))
			return
		}
		q.inflight++
		q.nInflight.Add(1)
		q.bq.Submit(tag, &s.req)
	case c.Res == ioResAbort:
		s.state = tagAborted
		q.aborted++
	case c.Res < 0:
		s.state = tagAborted
		q.aborted++
		q.fail(fmt.Errorf("ublk: queue %d tag %d: %s: %w", q.id, tag, cmdName(uIOCommitAndFetchReq), syscall.Errno(-c.Res)))
	default: // NEED_GET_DATA or unknown: we never asked for it
		s.state = tagExecuting
		q.commit(tag, -int32(syscall.EIO))
	}
}

func (q *queue) fail(err error) {
	if q.err == nil {
		q.err = err
	}
}

// start hands every tag to the kernel (FETCH_REQ). The queue goroutine
// calls it before serve; the kernel records the calling task as the
// queue's daemon.
func (q *queue) start() error {
	for tag := range q.slots {
		if !q.prepIO(uIOFetchReq, uint16(tag), 0) {
			return fmt.Errorf("ublk: queue %d: ring too small for depth %d", q.id, len(q.slots))
		}
	}
	return q.ring.submit(false)
}

// serve runs the queue until every tag is aborted (the device was
// stopped) or kill. It returns the first queue-fatal error.
func (q *queue) serve() error {
	for q.aborted < len(q.slots) || q.inflight > 0 || len(q.pending) > 0 {
		if q.killed.Load() {
			return nil
		}
		q.yield.Pass()
		q.nudged.Store(false)
		// What the last wake-up's requests gave the backend goes out
		// now, and completions a batching backend finishes here are
		// drained below without a wake-up. A Waiter then arms its
		// descriptor, whose poll ends the sleep below when completions
		// arrive (those it finished while arming are drained too).
		q.flush()
		q.drain()
		polling := q.arm()
		q.drain()
		q.flushPending()
		// Sleep only if no completion is waiting (see Complete) and no
		// Wake came (see Wake): either these loads see it, or the other
		// side sees sleeping.
		q.sleeping.Store(true)
		wait := polling && q.posted.Load() == q.taken && !q.nudged.Load() && !q.killed.Load()
		if !wait {
			q.sleeping.Store(false)
		}
		err := q.ring.submit(wait)
		q.sleeping.Store(false)
		if err != nil {
			q.fail(err)
			return q.err
		}
		n := q.ring.reap(q.cqes)
		for i := range n {
			q.handle(&q.cqes[i])
		}
		if q.err != nil {
			return q.err
		}
	}
	return nil
}

// run is the queue goroutine: start, serve, then tear down. ready gets
// the result of start. The OS thread stays locked and exits with the
// goroutine, as a crashed server's thread would: the driver ties the
// queue to the task, and recovery expects the old task to be gone.
func (q *queue) run(ready chan<- error) error {
	runtime.LockOSThread()
	if tid := gettid(); tid == syscall.Getpid() {
		// This is the process's main thread, which Go never ends: the old
		// queue task would outlive the queue, and the driver's recovery
		// expects it gone. Serve from another thread: a goroutine started
		// while this one holds the main thread cannot run on it.
		errc := make(chan error, 1)
		go func() { errc <- q.run(ready) }()
		err := <-errc
		runtime.UnlockOSThread()
		return err
	}
	q.tid.Store(int32(gettid()))
	err := q.start()
	ready <- err
	if err == nil {
		err = q.serve()
	}
	// The ring goes first: the kernel cancels what is still armed.
	q.ring.closeRing()
	// A Waiter's completions go back to its own goroutines, and a
	// batching backend may still hold requests submitted in the last
	// loop: they go out now, so that the wait below ends.
	q.release()
	q.flush()
	// Requests with the backend complete into nothing (the kernel requeues
	// them, or already failed them); wait for each so the buffers are no
	// longer in use when the backend queue closes.
	q.closing.Store(true)
	for q.inflight > 0 {
		if _, ok := q.done.pop(); !ok {
			// A Complete that saw closing false pushed before its
			// check, so the pop after the store above finds it; any
			// later one sends on closed.
			<-q.closed
			continue
		}
		q.inflight--
		q.nInflight.Add(-1)
	}
	q.wakeMu.Lock()
	q.wakerClosed = true
	q.ring.closeWaker()
	q.wakeMu.Unlock()
	if cerr := q.bq.Close(); err == nil {
		err = cerr
	}
	return err
}
