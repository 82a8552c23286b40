package initiator

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

const (
	// sendBatch is the number of queued SENDs that forces a PostSend in
	// Submit; fewer are posted by the next Poll or Wait.
	sendBatch = 16
	// spinPolls is how many times Wait polls the CQ (yielding between
	// polls) before arming it and sleeping.
	spinPolls = 32
)

// IOQueue is one I/O queue (its own RC QP and CQ) with its registered
// buffer pool, for the asynchronous API.
//
// An IOQueue is owned by ONE goroutine at a time: Submit, Poll, Wait,
// AllocBuffer and FreeBuffer must not run concurrently on the same queue
// (hand a queue over with your own synchronisation, e.g. a channel). None
// of them allocates. Close of the controller may run concurrently: these
// methods then return ErrClosed (or nothing).
type IOQueue struct {
	c           *Controller
	index       int
	q           *qpair
	pool        *bufferPool
	maxTransfer int
	inCapsule   int

	// life is read-locked by every public method and write-locked by
	// Controller.Close before it frees the queue's memory.
	life   sync.RWMutex
	closed bool // guarded by life

	ready []uint16 // ring of completed slots not yet returned by Poll
	rHead int
	rLen  int

	syncIOs  []IO  // preallocated IOs for the blocking API
	syncFree []*IO // free-IO stack storage for the blocking API
}

// newIOQueue wraps a connected qpair and allocates its buffer pool of
// depth buffers of maxTransfer bytes.
func newIOQueue(c *Controller, index int, q *qpair, maxTransfer, inCapsule int, maxMR uint64) (*IOQueue, error) {
	pool, err := newBufferPool(c.pd, q.depth, maxTransfer, maxMR)
	if err != nil {
		return nil, err
	}
	ioq := &IOQueue{
		c: c, index: index, q: q, pool: pool,
		maxTransfer: maxTransfer, inCapsule: inCapsule,
		ready:    make([]uint16, q.depth),
		syncIOs:  make([]IO, q.depth),
		syncFree: make([]*IO, 0, q.depth),
	}
	q.onComplete = ioq.complete
	q.onFail = c.lose
	return ioq, nil
}

// Index is the queue's position in the controller (QID - 1).
func (q *IOQueue) Index() int { return q.index }

// Depth is the maximum number of IOs outstanding (submitted and not yet
// returned by Poll).
func (q *IOQueue) Depth() int { return q.q.depth }

// MaxTransfer is the size of every Buffer of this queue and the largest
// data transfer of one IO, in bytes.
func (q *IOQueue) MaxTransfer() int { return q.maxTransfer }

// AllocBuffer takes a registered buffer of MaxTransfer bytes from the
// queue's pool (Depth buffers in all); false when none is free or the
// controller is closed.
func (q *IOQueue) AllocBuffer() (*Buffer, bool) {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return nil, false
	}
	return q.pool.alloc()
}

// FreeBuffer returns b to the pool. Buffers of other queues, nil, and
// buffers already free are ignored. The buffer must not be attached to an
// outstanding IO.
func (q *IOQueue) FreeBuffer(b *Buffer) {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return
	}
	q.pool.release(b)
}

// Submit queues io for execution without blocking. It returns
// ErrQueueFull when Depth IOs are outstanding (Poll some first),
// ErrInvalid for a malformed IO, ErrControllerLost or ErrClosed when the
// controller is gone. On success the IO will be returned by Poll exactly
// once. Submissions are posted to the device in batches: at the latest by
// the next Poll or Wait.
func (q *IOQueue) Submit(io *IO) error {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return ErrClosed
	}
	return q.submit(io, true)
}

// submit queues a raw-API io; timed records the submit time for
// IO.Latency (the raw API; the multiplexed layer reads no clock per I/O).
func (q *IOQueue) submit(io *IO, timed bool) error {
	if io == nil {
		return ErrInvalid
	}
	if err := q.live(); err != nil {
		return err
	}
	n, err := q.check(io)
	if err != nil {
		return err
	}
	return q.post(io, n, timed)
}

// live is nil while the queue can take commands.
func (q *IOQueue) live() error {
	if q.c.isDead() {
		return q.c.deadErr()
	}
	if q.q.err != nil {
		return ErrControllerLost
	}
	return nil
}

// check validates an IO of the raw API and returns its data length (0
// for commands without data).
func (q *IOQueue) check(io *IO) (int, error) {
	switch io.Op {
	case IORead, IOWrite:
		bs := q.c.blockSize(io.NSID)
		if bs == 0 || io.Blocks == 0 || io.Blocks > MaxBlocksPerIO || io.Buf == nil || !(io.Buf.ext || q.pool.owns(io.Buf)) {
			return 0, ErrInvalid
		}
		n := int(io.Blocks) * bs
		if n > q.maxTransfer || n > len(io.Buf.b) {
			return 0, ErrInvalid
		}
		return n, nil
	case IOWriteZeroes:
		if io.Blocks == 0 || io.Blocks > MaxBlocksPerIO {
			return 0, ErrInvalid
		}
	case IODeallocate:
		if io.Blocks == 0 {
			return 0, ErrInvalid
		}
	case IOFlush:
	default:
		return 0, ErrInvalid
	}
	return 0, nil
}

// post queues io, valid with data length n: checked by check, or built
// so by the queue mux (issue), whose commands the session checked
// against the namespace and fit bounded by MaxTransfer. The caller saw
// live return nil.
func (q *IOQueue) post(io *IO, n int, timed bool) error {
	i, e, ok := q.q.alloc()
	if !ok {
		return ErrQueueFull
	}
	var flags uint32
	if io.FUA {
		flags = nvme.RWFUA
	}
	switch io.Op {
	case IORead:
		e.SetRW(nvme.IORead, io.NSID, io.LBA, io.Blocks, 0)
		q.q.setData(i, e, io.Buf, n, false, false)
	case IOWrite:
		e.SetRW(nvme.IOWrite, io.NSID, io.LBA, io.Blocks, flags)
		q.q.setData(i, e, io.Buf, n, true, n <= q.inCapsule)
	case IOFlush:
		e.SetFlush(io.NSID)
		q.q.setData(i, e, nil, 0, false, false)
	case IOWriteZeroes:
		e.SetRW(nvme.IOWriteZeroes, io.NSID, io.LBA, io.Blocks, flags)
		q.q.setData(i, e, nil, 0, false, false)
	case IODeallocate:
		area := q.q.dsmArea(i)
		nvme.PutDSMRange(area, 0, nvme.DSMRange{NLB: io.Blocks, SLBA: io.LBA})
		e.SetDSM(io.NSID, 1, nvme.DSMAttrDeallocate)
		q.q.setData(i, e, nil, nvme.DSMRangeSize, true, true)
	}
	// Setters keep CID and PSDT, but do not rely on it.
	e.SetCID(q.q.cid(i))
	e.SetPSDT(nvme.PSDTSGL)
	io.Status, io.Err, io.Latency = 0, nil, 0
	s := &q.q.slots[i]
	s.io = io
	s.start = time.Time{}
	if timed {
		s.start = time.Now()
	}
	q.q.queueSend(i)
	if q.q.w.pending() >= sendBatch {
		// A failure loses the controller; the IO then comes back from
		// Poll with ErrControllerLost, so Submit still succeeded.
		_ = q.q.flush()
	}
	return nil
}

// complete is the qpair's onComplete: record the result and queue the
// slot for Poll.
func (q *IOQueue) complete(i uint16) {
	s := &q.q.slots[i]
	if io := s.io; io != nil {
		io.Status = s.cqe.Status()
		io.Err = nil
		if !s.start.IsZero() {
			io.Latency = time.Since(s.start)
		}
	}
	q.push(i)
}

func (q *IOQueue) push(i uint16) {
	j := q.rHead + q.rLen // wrapped by comparison: no division per I/O
	if j >= len(q.ready) {
		j -= len(q.ready)
	}
	q.ready[j] = i
	q.rLen++
}

// drainReady moves completed IOs into done and frees their slots.
func (q *IOQueue) drainReady(done []*IO) int {
	n := 0
	for n < len(done) && q.rLen > 0 {
		i := q.ready[q.rHead]
		if q.rHead++; q.rHead == len(q.ready) {
			q.rHead = 0
		}
		q.rLen--
		done[n] = q.q.slots[i].io
		q.q.release(i)
		n++
	}
	return n
}

// checkDead fails every outstanding IO once the queue or the controller
// is dead.
func (q *IOQueue) checkDead() {
	if q.q.err == nil && !q.c.isDead() {
		return
	}
	err := q.c.deadErr()
	q.q.failOutstanding(func(i uint16) {
		if io := q.q.slots[i].io; io != nil {
			io.Err = err
			if st := q.q.slots[i].start; !st.IsZero() {
				io.Latency = time.Since(st)
			}
		}
		q.push(i)
	})
}

// Poll posts pending submissions, reaps completions without blocking and
// stores up to len(done) completed IOs in done, returning how many. After
// the controller is lost every outstanding IO is returned with Err set.
// After Close it returns 0.
func (q *IOQueue) Poll(done []*IO) int {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return 0
	}
	return q.reap(done)
}

func (q *IOQueue) reap(done []*IO) int {
	_ = q.q.flush()
	n := q.drainReady(done)
	if n < len(done) {
		q.q.poll()
		q.checkDead()
		n += q.drainReady(done[n:])
	}
	return n
}

// Wait posts pending submissions and blocks until at least one
// completion can be reaped by Poll, busy-polling briefly before arming the
// CQ and sleeping. It returns nil when Poll has something (including IOs
// failed by a lost controller), ErrIdle when nothing is outstanding,
// ErrControllerLost / ErrClosed when the controller is gone and nothing is
// left to reap, or ctx's error.
func (q *IOQueue) Wait(ctx context.Context) error {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return ErrClosed
	}
	return q.wait(ctx)
}

func (q *IOQueue) wait(ctx context.Context) error {
	for {
		_ = q.q.flush()
		if q.rLen > 0 {
			return nil
		}
		q.q.poll()
		q.checkDead()
		if q.rLen > 0 {
			return nil
		}
		if q.c.isDead() {
			return q.c.deadErr()
		}
		if q.q.busy == 0 {
			return ErrIdle
		}
		for k := 0; k < spinPolls && q.q.err == nil; k++ {
			runtime.Gosched()
			if q.q.poll() > 0 && q.rLen > 0 {
				return nil
			}
		}
		if q.q.err != nil {
			continue
		}
		if err := q.q.w.arm(); err != nil {
			q.q.fail(fmt.Errorf("%w: queue %d: arm CQ: %w", ErrControllerLost, q.q.qid, err))
			continue
		}
		if q.q.poll() > 0 && q.rLen > 0 {
			return nil
		}
		select {
		case <-q.q.w.notify():
		case <-q.c.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// connect sends the fabrics Connect command for this I/O queue, waits for
// its response and authenticates the queue if the controller asks for it
// (or bidirectional authentication is configured), all before the queue
// is handed to anyone.
func (q *IOQueue) connect(ctx context.Context, d *nvme.ConnectData) error {
	b, ok := q.pool.alloc()
	if !ok {
		return fmt.Errorf("%w: queue %d: no buffer for connect data", ErrInvalid, q.q.qid)
	}
	if err := d.Marshal(b.b); err != nil {
		q.pool.release(b)
		return fmt.Errorf("%w: connect data: %w", ErrInvalid, err)
	}
	cqe, err := q.execSync(ctx, "connect", func(e *nvme.SQE) {
		e.SetConnect(q.q.qid, uint16(len(q.q.slots)-1), 0, 0)
	}, b, nvme.ConnectDataSize)
	q.pool.release(b)
	if err != nil {
		return err
	}
	if st := cqe.Status(); !st.OK() {
		return &ConnectError{Addr: q.c.addr, SubNQN: d.SubNQN, HostNQN: d.HostNQN, QID: q.q.qid, Status: st,
			Param: nvme.ParseConnectInvalidParam(cqe.DW0())}
	}
	return q.c.authenticate(ctx, q.q.qid, ioqAuth{q}, cqe.DW0())
}

// sqeToCtrl reports whether the command moves data from host to
// controller: opcode bits 1:0, or FCTYPE's for a fabrics command (NVMe-oF
// §3.3).
func sqeToCtrl(e *nvme.SQE) bool {
	d := nvme.OpcodeDirection(e.Opcode())
	if e.IsFabrics() {
		d = nvme.OpcodeDirection(e.FCType())
	}
	return d == nvme.DirHostToCtrl
}

// execSync sends one fabrics command (set up by fill) whose n bytes of
// data, if any, are in b (host to controller or controller to host, as
// the command says: the keyed SGL grants both), and polls for its
// response. Only for the connect phase, before the queue has an owner.
func (q *IOQueue) execSync(ctx context.Context, op string, fill func(*nvme.SQE), b *Buffer, n int) (nvme.CQE, error) {
	i, e, ok := q.q.alloc()
	if !ok {
		return nvme.CQE{}, fmt.Errorf("%w: queue %d: no slot for %s", ErrInvalid, q.q.qid, op)
	}
	fill(e)
	e.SetCID(q.q.cid(i))
	e.SetPSDT(nvme.PSDTSGL)
	// Connect data (host to controller) and authentication messages in
	// either direction: over RDMA a keyed SGL, over TCP in the capsule or
	// in C2HData.
	q.q.setData(i, e, b, n, sqeToCtrl(e), false)
	var (
		got bool
		cqe nvme.CQE
	)
	q.q.onComplete = func(idx uint16) {
		got = true
		cqe = q.q.slots[idx].cqe
		q.q.release(idx)
	}
	defer func() { q.q.onComplete = q.complete }()
	q.q.queueSend(i)
	if err := q.q.flush(); err != nil {
		return nvme.CQE{}, err
	}
	for !got {
		q.q.poll()
		if q.q.err != nil {
			return nvme.CQE{}, q.q.err
		}
		if got {
			break
		}
		// Arm, then poll again before sleeping: a completion that
		// arrived before the arm raises no event.
		if err := q.q.w.arm(); err != nil {
			return nvme.CQE{}, fmt.Errorf("initiator: queue %d: arm CQ: %w", q.q.qid, err)
		}
		if q.q.poll(); got || q.q.err != nil {
			continue
		}
		select {
		case <-q.q.w.notify():
		case <-ctx.Done():
			return nvme.CQE{}, fmt.Errorf("initiator: queue %d: %s: %w", q.q.qid, op, ctx.Err())
		}
	}
	return cqe, nil
}
