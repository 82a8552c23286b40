package initiator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/internal/idmap"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// Controller states.
const (
	stateLive    int32 = iota // connected
	stateClosing              // Close is shutting the controller down
	stateLost                 // a queue failed; Done is closed
	stateClosed               // Close finished its shutdown; Done is closed
)

// Controller is a connected NVMe-oF controller: an admin queue and
// NumQueues I/O queues, each its own RDMA connection, all on one
// protection domain. Its methods are safe for concurrent use.
type Controller struct {
	opts   Options
	tr     Transport // the transport of every queue
	addr   string
	subNQN string
	log    *slog.Logger

	pd    verbs.ProtectionDomain
	admin *adminQueue

	// Set during Connect, read-only afterwards.
	cap         uint64
	vs          uint32
	cc          uint32
	cntlid      uint16
	ident       nvme.IdentifyController
	maxTransfer int // bytes per command, a multiple of 4 KiB
	inCapsule   int // in-capsule data bytes per I/O command, 0 = none
	queues      []*IOQueue
	muxes       []*queueMux   // the multiplexed submission layer, one per queue
	rr          atomic.Uint32 // round-robin queue choice of route

	nsMu sync.Mutex // serialises namespace rescans; guards nsByID writes
	// nsByID holds the active namespaces (usually one: no map lookup per
	// I/O), replaced whole under nsMu.
	nsByID atomic.Pointer[idmap.Map[uint32, *Namespace]]

	stateMu sync.Mutex // guards state transitions and lostErr
	state   atomic.Int32
	lostErr error
	done    chan struct{} // closed when lost or closed

	conns   sync.Mutex // guards qpairs (for disconnect on loss)
	qpairs  []*qpair
	bg      sync.WaitGroup // background goroutines
	closeMu sync.Mutex     // serialises Close
	closed  bool

	// authTID numbers the controller's DH-HMAC-CHAP transactions (one
	// per queue; T_ID is its low 16 bits).
	authTID atomic.Uint32

	// maxMR and maxSGE are the device's MaxMRSize and MaxSGE (set in
	// Connect; RDMA only).
	maxMR  uint64
	maxSGE int
	// ext is the table of session MemRegions registered on pd (zero
	// copy), replaced (never modified) under Session.regMu; read by queue
	// goroutines with one atomic load.
	ext atomic.Pointer[[]extMR]
}

func newController(addr, subNQN string, opts Options) *Controller {
	c := &Controller{opts: opts, addr: addr, subNQN: subNQN, log: opts.Logger, done: make(chan struct{})}
	c.nsByID.Store(idmap.New(map[uint32]*Namespace{}))
	return c
}

// CNTLID is the controller ID the target assigned.
func (c *Controller) CNTLID() uint16 { return c.cntlid }

// Identify returns the Identify Controller data read at connect time.
func (c *Controller) Identify() nvme.IdentifyController { return c.ident }

// NumQueues is the number of I/O queues.
func (c *Controller) NumQueues() int { return len(c.queues) }

// Queue returns I/O queue i (0 ≤ i < NumQueues) for the asynchronous API,
// or nil when i is out of range. See the package doc on ownership.
func (c *Controller) Queue(i int) *IOQueue {
	if i < 0 || i >= len(c.queues) {
		return nil
	}
	return c.queues[i]
}

// MaxTransfer is the largest data transfer of one command in bytes (from
// MDTS and the buffer size).
func (c *Controller) MaxTransfer() int { return c.maxTransfer }

// Done is closed when the controller is lost (any queue failed) or
// closed. Err tells which.
func (c *Controller) Done() <-chan struct{} { return c.done }

// Err is nil while the controller is usable, ErrClosed after Close, and an
// error wrapping ErrControllerLost (with the cause) after a failure.
func (c *Controller) Err() error {
	switch c.state.Load() {
	case stateLost:
		c.stateMu.Lock()
		defer c.stateMu.Unlock()
		return c.lostErr
	case stateClosed:
		return ErrClosed
	}
	return nil
}

// isDead reports whether Done is closed.
func (c *Controller) isDead() bool {
	s := c.state.Load()
	return s == stateLost || s == stateClosed
}

// deadErr is the sentinel for operations on a dead controller.
func (c *Controller) deadErr() error {
	if c.state.Load() == stateClosed {
		return ErrClosed
	}
	return ErrControllerLost
}

// lose marks the controller lost with cause err (which should wrap
// ErrControllerLost), closes Done and disconnects every queue so that the
// target stops touching host memory and outstanding work requests flush.
// It is a no-op once the controller is lost or closed. Any goroutine may
// call it; it does not block on queue owners.
func (c *Controller) lose(err error) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	s := c.state.Load()
	if s != stateLive && s != stateClosing {
		return
	}
	if !errors.Is(err, ErrControllerLost) {
		err = fmt.Errorf("%w: %w", ErrControllerLost, err)
	}
	// Disconnect before anyone can observe the loss: once a queue owner
	// sees it, it hands buffers of failed IOs back to the caller, and
	// the target must no longer be able to touch them.
	c.conns.Lock()
	for _, q := range c.qpairs {
		q.disconnect()
	}
	c.conns.Unlock()
	c.lostErr = err
	c.state.Store(stateLost)
	close(c.done)
	if s == stateLive {
		c.log.Warn("nvme-of controller lost", "addr", c.addr, "subnqn", c.subNQN, "cntlid", c.cntlid, "err", err)
	}
}

// track registers a connected qpair for disconnect-on-loss and starts the
// goroutine that watches its connection.
func (c *Controller) track(q *qpair) {
	c.conns.Lock()
	c.qpairs = append(c.qpairs, q)
	c.conns.Unlock()
	w := q.w
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		select {
		case <-w.connDone():
			c.lose(fmt.Errorf("%w: queue %d: connection ended: %w", ErrControllerLost, q.qid, w.connErr()))
		case <-c.done:
		}
	}()
}

// Namespaces returns the active namespaces ordered by NSID.
func (c *Controller) Namespaces() []*Namespace {
	m := c.nsByID.Load().All()
	out := make([]*Namespace, 0, len(m))
	for _, ns := range m {
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].nsid < out[j].nsid })
	return out
}

// Namespace returns active namespace nsid, or an error wrapping
// ErrNoNamespace.
func (c *Controller) Namespace(nsid uint32) (*Namespace, error) {
	if ns := c.nsByID.Load().Get(nsid); ns != nil {
		return ns, nil
	}
	return nil, fmt.Errorf("%w: nsid %d", ErrNoNamespace, nsid)
}

// blockSize is the block size of active namespace nsid, or 0. It does not
// allocate (hot path).
func (c *Controller) blockSize(nsid uint32) int {
	ns := c.nsByID.Load().Get(nsid)
	if ns == nil {
		return 0
	}
	return ns.BlockSize()
}

// keepAliveLoop sends Keep Alive every KATO/2 until the controller dies;
// a failed or timed-out Keep Alive loses the controller.
func (c *Controller) keepAliveLoop(kato time.Duration) {
	defer c.bg.Done()
	t := time.NewTicker(kato / 2)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), kato)
		err := c.admin.keepAlive(ctx)
		cancel()
		if f := c.opts.OnKeepAlive; f != nil {
			f(err)
		}
		if err != nil && !c.isDead() {
			c.lose(fmt.Errorf("%w: keep alive: %w", ErrControllerLost, err))
			return
		}
	}
}

// aerLoop keeps one Asynchronous Event Request outstanding and handles
// namespace attribute notices by rescanning namespaces.
func (c *Controller) aerLoop() {
	defer c.bg.Done()
	for {
		cqe, err := c.admin.exec(context.Background(), func(e *nvme.SQE) { e.SetAsyncEventRequest() }, nil, 0, noData)
		if err != nil {
			return // controller dead
		}
		if !cqe.Status().OK() {
			// Aborted (shutdown) or AER limit exceeded: stop asking.
			if !c.isDead() && c.state.Load() == stateLive {
				c.log.Info("async event request ended", "status", cqe.Status().String())
			}
			return
		}
		typ, info, lid := nvme.ParseAsyncEventResult(cqe.DW0())
		c.log.Info("async event", "type", typ, "info", info, "lid", lid)
		if typ == nvme.AsyncEventTypeNotice && info == nvme.AsyncEventNoticeANAChange {
			// Whoever reads the ANA log (with RAE clear) clears the
			// event; without a listener, read it here.
			if f := c.opts.onANAChange; f != nil {
				f()
			} else if _, err := c.readANA(context.Background()); err != nil {
				c.log.Warn("read ANA log", "err", err)
			}
			continue
		}
		if typ == nvme.AsyncEventTypeNotice && info == nvme.AsyncEventNoticeNSChanged {
			ctx, cancel := context.WithTimeout(context.Background(), c.opts.ConnectTimeout)
			// Reading the Changed Namespace List clears the event.
			if _, err := c.admin.getLogPage(ctx, nvme.LogChangedNSList, 0xFFFFFFFF, nvme.IdentifySize, 0, c.maxTransfer); err != nil {
				c.log.Warn("read changed namespace list", "err", err)
			}
			err := c.scanNamespaces(ctx)
			if err != nil {
				c.log.Warn("rescan namespaces", "err", err)
			}
			cancel()
			if f := c.opts.OnRescan; f != nil {
				f(err)
			}
		}
	}
}

// Close shuts the controller down (CC.SHN normal, waiting for
// CSTS.SHST complete, bounded), disconnects every queue and frees all
// resources. Outstanding IOs are abandoned: Poll returns nothing after
// Close, blocked Wait and Namespace calls return ErrClosed. Close waits for
// goroutines inside IOQueue methods to leave, so it must not be called
// from inside them. It returns the shutdown error, if any; it is
// idempotent (later calls return nil).
func (c *Controller) Close() error {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var shutErr error
	c.stateMu.Lock()
	live := c.state.CompareAndSwap(stateLive, stateClosing)
	c.stateMu.Unlock()
	if live && c.admin != nil && c.cc&nvme.CCEN != 0 {
		shutErr = c.shutdown()
	}
	c.markClosed()
	c.teardown()
	return shutErr
}

// markClosed disconnects every queue and closes Done with state closed,
// unless the controller was lost already.
func (c *Controller) markClosed() {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	if s := c.state.Load(); s == stateClosing || s == stateLive {
		c.conns.Lock()
		for _, q := range c.qpairs {
			q.disconnect()
		}
		c.conns.Unlock()
		c.state.Store(stateClosed)
		close(c.done)
	}
}

// shutdown requests a normal shutdown and waits for it to complete.
func (c *Controller) shutdown() error {
	bound := 5 * time.Second
	if e := time.Duration(c.ident.RTD3E) * time.Microsecond; e > bound {
		bound = min(e, 30*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cc := c.cc&^nvme.CCSHNMask | nvme.CCSHNNormal
	if err := c.admin.propertySet(ctx, nvme.PropCC, cc); err != nil {
		return fmt.Errorf("initiator: shutdown: %w", err)
	}
	err := c.pollCSTS(ctx, func(csts uint32) bool { return csts&nvme.CSTSSHSTMask == nvme.CSTSSHSTComplete })
	if err != nil {
		return fmt.Errorf("initiator: shutdown: %w", err)
	}
	return nil
}

// pollCSTS reads CSTS until cond holds, backing off from 1 ms to 50 ms,
// until ctx ends (ErrTimeout). CSTS.CFS is a fatal controller status.
func (c *Controller) pollCSTS(ctx context.Context, cond func(uint32) bool) error {
	delay := time.Millisecond
	t := time.NewTimer(0)
	defer t.Stop()
	<-t.C
	for {
		v, err := c.admin.propertyGet(ctx, nvme.PropCSTS, false)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", ErrTimeout, err)
			}
			return err
		}
		csts := uint32(v)
		if csts&nvme.CSTSCFS != 0 {
			return fmt.Errorf("%w: controller fatal status (CSTS %#x)", ErrControllerLost, csts)
		}
		if cond(csts) {
			return nil
		}
		t.Reset(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("%w: CSTS %#x", ErrTimeout, csts)
		case <-c.done:
			return c.deadErr()
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// teardown stops the background goroutines, waits for queue users to
// leave and releases every resource. Done must already be closed.
func (c *Controller) teardown() {
	// Disconnect first: the target stops accessing host memory, blocked
	// pollers and waiters see the dead controller.
	c.conns.Lock()
	qs := append([]*qpair(nil), c.qpairs...)
	c.conns.Unlock()
	for _, q := range qs {
		q.disconnect()
	}
	c.bg.Wait()
	for _, ioq := range c.queues {
		ioq.life.Lock() // waits for Submit/Poll/Wait callers to leave
		ioq.closed = true
	}
	var errs []error
	for _, ioq := range c.queues {
		if err := ioq.q.destroy(); err != nil {
			errs = append(errs, err)
		}
		if ioq.pool != nil {
			if err := ioq.pool.close(); err != nil {
				errs = append(errs, err)
			}
		}
		ioq.life.Unlock()
	}
	if c.admin != nil {
		if err := c.admin.q.destroy(); err != nil {
			errs = append(errs, err)
		}
		if err := c.admin.pool.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.extClose(); err != nil {
		errs = append(errs, err)
	}
	if c.pd != nil {
		if err := c.pd.Close(); err != nil {
			errs = append(errs, err)
		}
		c.pd = nil
	}
	if err := errors.Join(errs...); err != nil {
		c.log.Warn("controller teardown", "err", err)
	}
}
