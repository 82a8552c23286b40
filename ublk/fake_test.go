package ublk

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// fakeKernel plays the ublk driver's side of one queue for the queue
// state machine: it takes FETCH_REQ / COMMIT_AND_FETCH_REQ from the SQEs
// the queue prepares (checking them as the driver does), writes
// descriptors and completes fetches when the test issues a request.
type fakeKernel struct {
	qid    uint16
	charFD int32
	descs  []byte
	sqes   []uring.SQE128
	nprep  int // owned by the queue goroutine

	mu     sync.Mutex
	cq     []uring.CQE
	state  []fkState
	ud     []uint64
	events chan fkEvent
	kick   chan struct{}

	pollFn func(fd int, key uint64) // arms a poll (Waiter tests); queue goroutine
	polled atomic.Bool

	ringClosed, wakerClosed atomic.Bool
	ringClosedCh            chan struct{}
	wakes                   atomic.Int64
}

type fkState uint8

const (
	fkNone   fkState = iota
	fkActive         // fetch armed, waiting for a request
	fkOwned          // request handed to the server
)

type fkEvent struct {
	op     uint32
	tag    uint16
	result int32
	addr   uint64
}

func newFakeKernel(qid uint16, depth int) *fakeKernel {
	return &fakeKernel{
		qid: qid, charFD: 42, cq: make([]uring.CQE, 0, 4*depth+4), descs: make([]byte, depth*ioDescSize), sqes: make([]uring.SQE128, depth+1),
		state: make([]fkState, depth), ud: make([]uint64, depth), events: make(chan fkEvent, 4*depth+16), kick: make(chan struct{}, 1),
		ringClosedCh: make(chan struct{}),
	}
}

func (k *fakeKernel) next() *uring.SQE128 {
	if k.nprep == len(k.sqes) {
		return nil
	}
	e := &k.sqes[k.nprep]
	*e = uring.SQE128{}
	k.nprep++
	return e
}

func (k *fakeKernel) post(c uring.CQE) {
	k.cq = append(k.cq, c)
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *fakeKernel) submit(wait bool) error {
	k.mu.Lock()
	for i := range k.nprep {
		e := &k.sqes[i]
		q, tag := ne.Uint16(e.Cmd[0:]), ne.Uint16(e.Cmd[2:])
		ev := fkEvent{op: e.CmdOp(), tag: tag, result: int32(ne.Uint32(e.Cmd[4:])), addr: ne.Uint64(e.Cmd[8:])}
		bad := e.Opcode != uring.OpURingCmd || e.FD != k.charFD || q != k.qid || int(tag) >= len(k.state) || ev.addr == 0
		switch {
		case bad:
		case ev.op == uIOFetchReq && k.state[tag] == fkNone:
		case ev.op == uIOCommitAndFetchReq && k.state[tag] == fkOwned:
		default:
			bad = true
		}
		if bad {
			k.post(uring.CQE{UserData: e.UserData, Res: -int32(syscall.EINVAL)})
			continue
		}
		k.state[tag], k.ud[tag] = fkActive, e.UserData
		k.events <- ev
	}
	k.nprep = 0
	for wait && len(k.cq) == 0 {
		k.mu.Unlock()
		<-k.kick
		k.mu.Lock()
		wait = false // a wake with nothing to reap is allowed: the queue loops
	}
	k.mu.Unlock()
	return nil
}

func (k *fakeKernel) reap(out []uring.CQE) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := copy(out, k.cq)
	k.cq = k.cq[:copy(k.cq, k.cq[n:])]
	return n
}

func (k *fakeKernel) wake() {
	if k.wakerClosed.Load() {
		panic("wake after closeWaker")
	}
	k.wakes.Add(1)
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// poll: with pollFn set (a Waiter test) the test's own poller arms
// it; without, polls are accepted and never fire.
func (k *fakeKernel) poll(fd int, key uint64) bool {
	if k.pollFn != nil {
		k.pollFn(fd, key)
	}
	return true
}

func (k *fakeKernel) cancelPoll() {}

func (k *fakeKernel) pollResult() (fired, failed bool) {
	return k.polled.Swap(false), false
}

// pollFired is the test poller's report: the armed poll fired.
func (k *fakeKernel) pollFired() {
	k.polled.Store(true)
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

func (k *fakeKernel) closeRing() error {
	k.ringClosed.Store(true)
	close(k.ringClosedCh)
	return nil
}
func (k *fakeKernel) closeWaker() error { k.wakerClosed.Store(true); return nil }

// issue hands a request to the server on tag, as ublk_queue_rq would.
func (k *fakeKernel) issue(t testing.TB, tag uint16, d ioDesc) {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.state[tag] != fkActive {
		t.Fatalf("issue on tag %d in fake state %d", tag, k.state[tag])
	}
	b := k.descs[int(tag)*ioDescSize:]
	ne.PutUint32(b[0:], d.opFlags)
	ne.PutUint32(b[4:], d.nrSectors)
	ne.PutUint64(b[8:], d.startSector)
	ne.PutUint64(b[16:], d.addr)
	k.state[tag] = fkOwned
	k.post(uring.CQE{UserData: k.ud[tag], Res: ioResOK})
}

// abortAll ends every armed tag with ABORT, as ublk_cancel_dev does.
func (k *fakeKernel) abortAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for tag, s := range k.state {
		if s == fkActive {
			k.state[tag] = fkNone
			k.post(uring.CQE{UserData: k.ud[tag], Res: ioResAbort})
		}
	}
}

func (k *fakeKernel) event(t testing.TB) fkEvent {
	t.Helper()
	select {
	case ev := <-k.events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no command from the queue")
	}
	return fkEvent{}
}

// fakeBackend hands every submitted request to the test, which completes
// it from its own goroutine.
type fakeBackend struct {
	bufs     [][]byte
	subs     chan fakeSub
	closed   atomic.Int32
	bufCalls atomic.Int32
	done     Completer
}

type fakeSub struct {
	tag uint16
	req *Request
}

func (b *fakeBackend) Buffer(tag uint16) []byte {
	b.bufCalls.Add(1)
	return b.bufs[tag]
}
func (b *fakeBackend) Submit(tag uint16, r *Request) { b.subs <- fakeSub{tag, r} }
func (b *fakeBackend) Close() error                  { b.closed.Add(1); return nil }

func (b *fakeBackend) sub(t testing.TB) fakeSub {
	t.Helper()
	select {
	case s := <-b.subs:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the backend")
	}
	return fakeSub{}
}

const fakeMaxIO = 64 << 10

type queueRig struct {
	k    *fakeKernel
	b    *fakeBackend
	q    *queue
	done chan error
}

func startQueue(t testing.TB, depth int) *queueRig {
	t.Helper()
	k := newFakeKernel(3, depth)
	b := &fakeBackend{subs: make(chan fakeSub, depth)}
	for range depth {
		b.bufs = append(b.bufs, make([]byte, fakeMaxIO))
	}
	lim := &limits{devSectors: 1 << 20, lbsMask: 0, maxIOSectors: fakeMaxIO >> 9, maxDiscard: 1 << 10}
	q := newQueue(3, depth, k.charFD, k, k.descs, lim, fakeMaxIO)
	q.setBackend(b)
	b.done = q
	ready := make(chan error, 1)
	done := make(chan error, 1)
	go func() { done <- q.run(ready) }()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	return &queueRig{k: k, b: b, q: q, done: done}
}

func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

func (r *queueRig) finish(t testing.TB) error {
	t.Helper()
	return runEnd(t, r.done, "queue did not end")
}

// runEnd returns a queue goroutine's result from done, failing with what
// if it has not ended within 10 s.
func runEnd(t testing.TB, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal(what)
	}
	return nil
}

// TestQueueStateMachine drives one queue through FETCH for every tag,
// reads, writes, flush, backend errors, malformed descriptors (answered
// without reaching the backend), and the ABORT that ends it.
func TestQueueStateMachine(t *testing.T) {
	const depth = 4
	r := startQueue(t, depth)
	k, b := r.k, r.b
	seen := map[uint16]bool{}
	for range depth {
		ev := k.event(t)
		if ev.op != uIOFetchReq || ev.result != 0 || ev.addr != addrOf(b.bufs[ev.tag]) || seen[ev.tag] {
			t.Fatalf("fetch %+v", ev)
		}
		seen[ev.tag] = true
	}

	// A write: the backend gets the tag's buffer, the kernel the length.
	k.issue(t, 1, ioDesc{opFlags: iodOpWrite | iodFUA, nrSectors: 8, startSector: 64})
	s := b.sub(t)
	if s.tag != 1 || s.req.Op != OpWrite || !s.req.FUA || s.req.Offset != 64*512 || s.req.Length != 4096 || &s.req.Data[0] != &b.bufs[1][0] {
		t.Fatalf("submitted %d %+v", s.tag, s.req)
	}
	go b.done.Complete(1, 0) // from another goroutine, while the queue sleeps
	if ev := k.event(t); ev.op != uIOCommitAndFetchReq || ev.tag != 1 || ev.result != 4096 || ev.addr != addrOf(b.bufs[1]) {
		t.Fatalf("commit %+v", ev)
	}

	// A read that fails in the backend; a flush.
	k.issue(t, 2, ioDesc{opFlags: iodOpRead, nrSectors: 16})
	k.issue(t, 0, ioDesc{opFlags: iodOpFlush})
	for range 2 {
		s := b.sub(t)
		switch s.req.Op {
		case OpRead:
			b.done.Complete(s.tag, syscall.EIO)
		case OpFlush:
			b.done.Complete(s.tag, 0)
		default:
			t.Fatalf("submitted %+v", s.req)
		}
	}
	for range 2 {
		ev := k.event(t)
		if ev.op != uIOCommitAndFetchReq || (ev.tag == 2 && ev.result != -int32(syscall.EIO)) || (ev.tag == 0 && ev.result != 0) {
			t.Fatalf("commit %+v", ev)
		}
	}

	// Malformed descriptors never reach the backend.
	for _, c := range []struct {
		d    ioDesc
		want syscall.Errno
	}{
		{ioDesc{opFlags: iodOpRead, nrSectors: 8, startSector: 1 << 20}, syscall.EIO},
		{ioDesc{opFlags: iodOpWrite, nrSectors: fakeMaxIO>>9 + 1}, syscall.EINVAL},
		{ioDesc{opFlags: 10, nrSectors: 8}, syscall.EOPNOTSUPP},
	} {
		k.issue(t, 3, c.d)
		if ev := k.event(t); ev.tag != 3 || ev.result != -int32(c.want) {
			t.Fatalf("%+v: commit %+v", c.d, ev)
		}
	}
	select {
	case s := <-b.subs:
		t.Fatalf("malformed request reached the backend: %+v", s.req)
	default:
	}
	if st := r.q.nRequests.Load(); st != 6 {
		t.Fatalf("%d requests counted", st)
	}
	// One buffer per tag for the queue's life: the driver copies a read's
	// data out of the address in the commit, so it must not change.
	if n := b.bufCalls.Load(); n != depth {
		t.Fatalf("Buffer called %d times for %d tags", n, depth)
	}

	k.abortAll()
	if err := r.finish(t); err != nil {
		t.Fatal(err)
	}
	if !k.ringClosed.Load() || !k.wakerClosed.Load() || b.closed.Load() != 1 {
		t.Fatalf("after stop: ring closed %v, waker closed %v, backend closes %d", k.ringClosed.Load(), k.wakerClosed.Load(), b.closed.Load())
	}
}

// TestQueueConcurrentCompletions completes every tag many times from
// many goroutines (completions racing the queue's sleep): none is lost.
func TestQueueConcurrentCompletions(t *testing.T) {
	const depth, rounds = 16, 50
	r := startQueue(t, depth)
	k, b := r.k, r.b
	for range depth {
		k.event(t)
	}
	for round := range rounds {
		for tag := range depth {
			k.issue(t, uint16(tag), ioDesc{opFlags: iodOpRead, nrSectors: 1, startSector: uint64(round)})
		}
		var wg sync.WaitGroup
		for range depth {
			s := b.sub(t)
			wg.Add(1)
			go func() { defer wg.Done(); b.done.Complete(s.tag, 0) }()
		}
		for range depth {
			if ev := k.event(t); ev.op != uIOCommitAndFetchReq || ev.result != 512 {
				t.Fatalf("round %d: %+v", round, ev)
			}
		}
		wg.Wait()
	}
	k.abortAll()
	if err := r.finish(t); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d wake-ups for %d completions", k.wakes.Load(), depth*rounds)
}

// TestQueueKill: a killed queue sends nothing more, waits for the
// backend's requests in flight, and only then closes the backend queue.
func TestQueueKill(t *testing.T) {
	r := startQueue(t, 2)
	k, b := r.k, r.b
	k.event(t)
	k.event(t)
	k.issue(t, 0, ioDesc{opFlags: iodOpWrite, nrSectors: 8})
	s := b.sub(t)
	r.q.kill()
	// The ring closes first (the kernel then cancels the queue's commands);
	// from there the queue can only wait for the request in the backend.
	<-k.ringClosedCh
	select {
	case err := <-r.done:
		t.Fatalf("queue ended with a request in the backend: %v", err)
	default:
	}
	if b.closed.Load() != 0 || k.wakerClosed.Load() {
		t.Fatal("backend queue or waker closed with a request in flight")
	}
	b.done.Complete(s.tag, 0)
	if err := r.finish(t); err != nil {
		t.Fatal(err)
	}
	if !k.ringClosed.Load() || b.closed.Load() != 1 {
		t.Fatal("not torn down")
	}
	select {
	case ev := <-k.events:
		t.Fatalf("command after kill: %+v", ev)
	default:
	}
}

// TestQueueKernelRefusesCommit: an error on our own command (not ABORT)
// ends the queue with an error naming it.
func TestQueueKernelRefusesCommit(t *testing.T) {
	r := startQueue(t, 1)
	k, b := r.k, r.b
	k.event(t)
	k.issue(t, 0, ioDesc{opFlags: iodOpRead, nrSectors: 1})
	s := b.sub(t)
	k.mu.Lock()
	k.state[0] = fkNone // the fake now refuses the commit
	k.mu.Unlock()
	b.done.Complete(s.tag, 0)
	err := r.finish(t)
	if err == nil || !contains(err.Error(), "COMMIT_AND_FETCH_REQ") {
		t.Fatalf("err %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// newFakeQueue is queue 3 of depth tags on the fake kernel k.
func newFakeQueue(k *fakeKernel, depth int) *queue {
	lim := &limits{devSectors: 1 << 20, lbsMask: 0, maxIOSectors: fakeMaxIO >> 9, maxDiscard: 1 << 10}
	return newQueue(3, depth, k.charFD, k, k.descs, lim, fakeMaxIO)
}

// runArmed starts q's goroutine and waits until it has armed every tag
// (FETCH_REQ); the returned channel gets run's result.
func runArmed(t *testing.T, k *fakeKernel, q *queue, depth int) chan error {
	t.Helper()
	ready, done := make(chan error, 1), make(chan error, 1)
	go func() { done <- q.run(ready) }()
	if err := <-ready; err != nil {
		t.Fatal(err)
	}
	for range depth {
		k.event(t)
	}
	return done
}

// flushBackend is a batching backend (Flusher): Submit only records the
// tag; Flush completes every recorded request, from inside Flush.
type flushBackend struct {
	fakeBackend
	held    []uint16 // queue goroutine only
	flushes atomic.Int32
	killOn  Op     // a request with this op kills the queue as it is submitted
	q       *queue // for killOn
}

func (b *flushBackend) Submit(tag uint16, r *Request) {
	b.held = append(b.held, tag)
	if r.Op == b.killOn {
		b.q.kill() // between this Submit and the loop's next Flush
	}
}
func (b *flushBackend) Flush() {
	b.flushes.Add(1)
	for _, tag := range b.held {
		b.done.Complete(tag, 0)
	}
	b.held = b.held[:0]
}

// TestQueueFlushesBatchingBackend: requests given to a backend that holds
// them until Flush complete — the queue flushes after every wake-up's
// submissions (a burst of 8 comes back as 8 commits) — and a queue
// killed with requests held flushes them before it waits for them.
func TestQueueFlushesBatchingBackend(t *testing.T) {
	const depth = 8
	k := newFakeKernel(3, depth)
	b := &flushBackend{killOn: OpWrite}
	for range depth {
		b.bufs = append(b.bufs, make([]byte, fakeMaxIO))
	}
	q := newFakeQueue(k, depth)
	q.setBackend(b)
	b.done, b.q = q, q
	done := runArmed(t, k, q, depth)
	for round := range 3 {
		for tag := range depth {
			k.issue(t, uint16(tag), ioDesc{opFlags: iodOpRead, nrSectors: 1, startSector: uint64(round)})
		}
		for range depth {
			if ev := k.event(t); ev.op != uIOCommitAndFetchReq || ev.result != 512 {
				t.Fatalf("round %d: %+v", round, ev)
			}
		}
	}
	// A write the backend holds when the queue is killed (the backend
	// kills it from Submit): the queue's teardown flushes it, so the wait
	// for it ends.
	k.issue(t, 0, ioDesc{opFlags: iodOpWrite, nrSectors: 8})
	if err := runEnd(t, done, "a killed queue never ended: its held request was not flushed"); err != nil {
		t.Fatal(err)
	}
	if b.closed.Load() != 1 {
		t.Fatal("backend queue not closed")
	}
}
