package initiator

import (
	"context"
	"fmt"
	"sync"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// Admin data buffers: enough for Identify (4 KiB) and a few discovery log
// entries per command; larger log pages are read in pieces.
const (
	adminBufSize  = 16 << 10
	adminBufCount = 4
)

// adminQueue is queue 0. Any goroutine may run commands on it through
// exec; one poller goroutine (run) reaps its completions.
type adminQueue struct {
	c *Controller

	mu sync.Mutex // guards q and the slot-level state of every adminCmd
	q  *qpair

	pool *bufferPool  // admin data buffers; owned through bufs
	bufs chan *Buffer // free admin data buffers
	sem  chan struct{}
}

// adminCmd is one admin (or fabrics) command in flight.
type adminCmd struct {
	done chan struct{} // closed on completion or failure
	cqe  nvme.CQE
	err  error
}

// dataDir is the data direction of an admin command.
type dataDir uint8

const (
	noData dataDir = iota
	hostToCtrl
	ctrlToHost
)

func newAdminQueue(c *Controller, q *qpair, pd verbs.ProtectionDomain, maxMR uint64) (*adminQueue, error) {
	pool, err := newBufferPool(pd, adminBufCount, adminBufSize, maxMR)
	if err != nil {
		return nil, err
	}
	a := &adminQueue{c: c, q: q, pool: pool, bufs: make(chan *Buffer, adminBufCount), sem: make(chan struct{}, q.depth)}
	for {
		b, ok := pool.alloc()
		if !ok {
			break
		}
		a.bufs <- b
	}
	q.onComplete = a.complete
	q.onFail = c.lose
	return a, nil
}

// complete is the qpair's onComplete (called with mu held).
func (a *adminQueue) complete(i uint16) {
	s := &a.q.slots[i]
	cmd := s.cmd
	a.q.release(i)
	if cmd != nil {
		cmd.cqe = s.cqe
		close(cmd.done)
	}
}

// failAll fails every outstanding admin command with err (mu held).
func (a *adminQueue) failAll(err error) {
	a.q.failOutstanding(func(i uint16) {
		s := &a.q.slots[i]
		cmd := s.cmd
		a.q.release(i)
		if cmd != nil {
			cmd.err = err
			close(cmd.done)
		}
	})
}

// getBuf takes an admin data buffer, blocking until one is free.
func (a *adminQueue) getBuf(ctx context.Context) (*Buffer, error) {
	select {
	case b := <-a.bufs:
		return b, nil
	case <-a.c.done:
		return nil, a.c.deadErr()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *adminQueue) putBuf(b *Buffer) { a.bufs <- b }

// exec runs one admin or fabrics command and waits for its response.
// fill sets up the command in the (zeroed, CID and PSDT already set) SQE;
// data, if non-nil, is a registered buffer whose first n bytes are the
// data in direction dir. The returned error is a transport failure (or
// ctx's); an NVMe error status is in the CQE. If ctx ends before the
// response, the controller is lost: the command's buffer could still be
// accessed by the target, so nothing about the queue can be trusted.
func (a *adminQueue) exec(ctx context.Context, fill func(*nvme.SQE), data *Buffer, n int, dir dataDir) (nvme.CQE, error) {
	select {
	case a.sem <- struct{}{}:
	case <-a.c.done:
		return nvme.CQE{}, a.c.deadErr()
	case <-ctx.Done():
		return nvme.CQE{}, ctx.Err()
	}
	defer func() { <-a.sem }()

	cmd := &adminCmd{done: make(chan struct{})}
	a.mu.Lock()
	// Checked under a.mu: the poller fails outstanding commands under
	// a.mu after the controller died, so a command registered after that
	// would never complete (the state turns dead before Done closes, and
	// the poller waits for Done before failing what is left).
	if a.q.err != nil || a.c.isDead() {
		a.mu.Unlock()
		return nvme.CQE{}, a.c.deadErr()
	}
	i, e, ok := a.q.alloc()
	if !ok { // cannot happen: sem bounds the commands
		a.mu.Unlock()
		return nvme.CQE{}, ErrQueueFull
	}
	fill(e)
	// fill's setters keep CID and PSDT; set them again in case a
	// setter does not.
	e.SetCID(a.q.cid(i))
	e.SetPSDT(nvme.PSDTSGL)
	if data == nil || dir == noData {
		n = 0
	}
	a.q.setData(i, e, data, n, dir == hostToCtrl, false)
	op := e.Opcode()
	a.q.slots[i].cmd = cmd
	a.q.queueSend(i)
	err := a.q.flush()
	a.mu.Unlock()
	if err != nil {
		return nvme.CQE{}, a.c.deadErr()
	}
	select {
	case <-cmd.done:
	case <-ctx.Done():
		a.c.lose(fmt.Errorf("%w: admin command %#x timed out: %w", ErrControllerLost, op, ctx.Err()))
		<-cmd.done // the poller fails it
		return nvme.CQE{}, ctx.Err()
	}
	if cmd.err != nil {
		return nvme.CQE{}, cmd.err
	}
	return cmd.cqe, nil
}

// run is the admin poller goroutine: it reaps completions, busy-polling
// briefly and then arming the CQ, until the controller is lost or closed;
// then it fails every outstanding command.
func (a *adminQueue) run() {
	w := a.q.w
	for {
		a.mu.Lock()
		n := a.q.poll()
		dead := a.q.err != nil
		a.mu.Unlock()
		if dead {
			break
		}
		if n > 0 {
			continue
		}
		if err := w.arm(); err != nil {
			a.c.lose(fmt.Errorf("%w: admin queue: arm CQ: %w", ErrControllerLost, err))
			break
		}
		a.mu.Lock()
		n = a.q.poll()
		a.mu.Unlock()
		if n > 0 {
			continue
		}
		select {
		case <-w.notify():
		case <-a.c.done:
		}
		if a.c.isDead() {
			break
		}
	}
	// Wait until the controller is dead (a qpair failure calls lose),
	// then fail what is left.
	<-a.c.done
	a.mu.Lock()
	a.failAll(a.c.deadErr())
	a.mu.Unlock()
}
