package rdma

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
)

// acceptTimeout bounds ConnID.Accept (establishment) for one connection.
const acceptTimeout = 30 * time.Second

// acceptLogEvery rate-limits the log line about failed Accept calls.
const acceptLogEvery = 10 * time.Second

// Listener accepts NVMe-oF RDMA connections for one target port. Its
// methods may be called from any goroutine.
type Listener struct {
	cfg   Config
	core  coreTarget
	hooks *testHooks
	ln    verbs.Listener
	log   *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the accept loop, connection setups and pollers.
	wg sync.WaitGroup

	// mu guards queues, closed, the unconnected counts and the refusal
	// log limiter.
	mu     sync.Mutex
	queues map[*queue]struct{}
	closed bool
	// unconnected counts connections between their connect request and a
	// successful Fabrics Connect (or their end), in total and by host
	// address (Config.MaxUnconnectedQueues / MaxUnconnectedPerHost).
	unconnected   int
	unconnectedBy map[string]int
	// refusalLog and refusalQuiet rate-limit refusal log lines.
	refusalLog   time.Time
	refusalQuiet int

	// groups are the poll groups (fixed at Listen).
	groups []*pollGroup

	closeOnce sync.Once
	closeErr  error
	stats     counters
	vector    atomic.Uint32
	// dataBytes are the data buffer bytes registered by all queues
	// (Config.MaxDataBufferBytes).
	dataBytes atomic.Int64
}

// testHooks observe the poller from tests (called on the goroutine of the
// poll group that owns the queue).
type testHooks struct {
	// readPosted reports the RDMA READs in flight after posting one.
	readPosted func(inFlight int)
	// draining reports that a queue entered the graceful drain.
	draining func(qid uint16)
	// dropped reports a capsule dropped unanswered during a drain.
	dropped func()
	// dataPosted reports the local buffer of every RDMA READ (host data
	// lands there) and RDMA WRITE (host data is sent from there) posted.
	dataPosted func(op verbs.Opcode, addr uint64, n uint32)
}

// Listen starts listening on cfg.Addr, registers the port with the target
// (transport type RDMA, address family from the address, TSAS: reliable
// connected QP, RoCE v2, RDMA CM) and starts accepting connections in the
// background. Close stops it.
func Listen(cfg Config) (*Listener, error) {
	if cfg.Provider == nil {
		return nil, fmt.Errorf("%w: Provider is nil", ErrInvalidConfig)
	}
	devs, err := cfg.Provider.Devices()
	if err != nil {
		return nil, fmt.Errorf("rdma: listing devices: %w", err)
	}
	minWR := 0
	for _, d := range devs {
		if a := d.Attr(); a.MaxQPWR > 0 && (minWR == 0 || a.MaxQPWR < minWR) {
			minWR = a.MaxQPWR
		}
	}
	if err := cfg.normalize(minWR); err != nil {
		return nil, err
	}
	l := &Listener{cfg: cfg, core: cfg.core, hooks: cfg.hooks, log: cfg.Logger,
		queues: make(map[*queue]struct{}), unconnectedBy: make(map[string]int)}
	if l.core == nil {
		l.core = targetCore{cfg.Target}
	}
	l.ln, err = cfg.Provider.Listen(cfg.Addr, verbs.ListenOptions{Backlog: 128})
	if err != nil {
		return nil, fmt.Errorf("rdma: listen %s: %w", cfg.Addr, err)
	}
	if err := l.core.AddPort(l.port()); err != nil {
		_ = l.ln.Close()
		return nil, fmt.Errorf("rdma: registering port %d: %w", cfg.PortID, err)
	}
	l.groups = make([]*pollGroup, cfg.PollGroups)
	for i := range l.groups {
		l.groups[i] = newPollGroup(l)
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

// port describes the listener to the target core.
func (l *Listener) port() target.Port {
	host, svc, err := net.SplitHostPort(l.ln.Addr())
	if err != nil {
		host, svc = l.ln.Addr(), DefaultPort
	}
	fam := uint8(nvme.AdrFamIPv4)
	if a, err := netip.ParseAddr(host); err == nil && a.Is6() && !a.Is4In6() {
		fam = nvme.AdrFamIPv6
	}
	return target.Port{
		ID:      l.cfg.PortID,
		TrType:  nvme.TrTypeRDMA,
		AdrFam:  fam,
		TrAddr:  host,
		TrSvcID: svc,
		TSAS:    nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0),
		Caps: target.TransportCaps{
			TrType:            nvme.TrTypeRDMA,
			KeyedSGL:          true,
			InCapsuleDataSize: l.cfg.InCapsuleDataSize,
			MaxDataTransfer:   l.cfg.MaxDataTransfer,
			MaxQueueDepth:     l.cfg.MaxQueueDepth,
			MaxSGLDescriptors: 1,
		},
	}
}

// Addr is the bound address ("host:port", with the actual port).
func (l *Listener) Addr() string { return l.ln.Addr() }

// Stats returns the counters: those of released queues plus those of the
// live ones (each counter read atomically on its own).
func (l *Listener) Stats() Stats {
	var sum counters
	l.mu.Lock()
	l.stats.addIO(&sum)
	for q := range l.queues {
		q.st.addIO(&sum)
	}
	l.mu.Unlock()
	s := sum.snapshot()
	s.Accepted = l.stats.accepted.Load()
	s.Rejected = l.stats.rejected.Load()
	s.Queues = l.stats.queues.Load()
	s.AcceptErrors = l.stats.acceptErrors.Load()
	s.UnconnectedRejected = l.stats.unconnectedRejected.Load()
	s.ConnectTimeouts = l.stats.connectTimeouts.Load()
	s.RegisteredBytes = l.stats.registeredBytes.Load()
	s.GrowthDenied = l.stats.growthDenied.Load()
	s.QuietEntries = l.stats.quietEntries.Load()
	s.QuietWakes = l.stats.quietWakes.Load()
	for _, g := range l.groups {
		s.Spins += g.spins.Load()
		s.CleanSkips += g.cleanSkips.Load()
	}
	l.mu.Lock()
	s.Unconnected = uint64(l.unconnected)
	l.mu.Unlock()
	return s
}

// Close stops accepting, drains every queue (commands already started are
// completed and their CQEs sent; capsules that arrive meanwhile, or that
// waited for a free slot, are neither executed nor answered — the host's
// error recovery retries them on another path once the queue disconnects;
// a queue that does not drain within DrainTimeout, or whose connection
// dies, is disconnected), waits until every queue released its resources,
// and unregisters the port. It blocks until then; it is idempotent. No
// command the target chose not to finish is answered with a status that is
// not path-related (a multipath host would fail the I/O instead of
// retrying it).
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		qs := make([]*queue, 0, len(l.queues))
		for q := range l.queues {
			qs = append(qs, q)
		}
		l.mu.Unlock()
		l.cancel()
		var errs []error
		if err := l.ln.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		for _, q := range qs {
			q.drain()
		}
		l.wg.Wait()
		for _, g := range l.groups {
			close(g.stop)
			g.ring()
			<-g.done
		}
		if err := l.core.RemovePort(l.cfg.PortID); err != nil {
			errs = append(errs, err)
		}
		l.closeErr = errors.Join(errs...)
	})
	return l.closeErr
}

// acceptLoop takes connect requests until the listener closes; each one is
// set up on its own goroutine so a slow host cannot stall the others. An
// Accept error other than the listener's own close never ends the loop: it
// is logged (at most once per acceptLogEvery) and retried after a back-off
// (5 ms doubling up to 1 s), so a provider's transient failure cannot stop
// new hosts from getting in.
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	var lastLog time.Time
	suppressed := 0
	for {
		req, err := l.ln.Accept(l.ctx)
		if err != nil {
			if l.ctx.Err() != nil || errors.Is(err, verbs.ErrClosed) {
				return
			}
			l.stats.acceptErrors.Add(1)
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if now := time.Now(); now.Sub(lastLog) >= acceptLogEvery {
				l.log.Error("rdma: accept failed; retrying", "err", err, "backoff", backoff, "suppressed", suppressed)
				lastLog, suppressed = now, 0
			} else {
				suppressed++
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-l.ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		backoff = 0
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.setup(req)
		}()
	}
}

// setup negotiates, allocates and accepts one connection, then starts its
// poller.
func (l *Listener) setup(req *verbs.ConnRequest) {
	id := req.ID
	src := hostOf(id.RemoteAddr())
	if why := l.enterUnconnected(src); why != "" {
		l.stats.unconnectedRejected.Add(1)
		l.noteRefusal(why, src)
		l.reject(id, nvme.CMRejectNoResources, why)
		return
	}
	dev := id.Device()
	attr := dev.Attr()
	p, status := negotiate(&l.cfg, attr, req.Param)
	if status != 0 {
		l.leaveUnconnectedSrc(src)
		l.reject(id, status, "negotiation")
		return
	}
	q, err := l.newQueue(id, dev, attr, p)
	if err != nil {
		l.leaveUnconnectedSrc(src)
		l.log.Warn("rdma: no resources for a queue", "remote", id.RemoteAddr(), "err", err)
		l.reject(id, nvme.CMRejectNoResources, "resources")
		return
	}
	q.src, q.unconn = src, true
	cq, err := l.core.NewQueue(l.cfg.PortID, q, p.depth)
	if err != nil {
		l.log.Warn("rdma: target refused a queue", "remote", id.RemoteAddr(), "err", err)
		q.release(false)
		l.leaveUnconnected(q)
		l.reject(id, nvme.CMRejectNoResources, "target")
		return
	}
	q.core = cq
	q.batch, _ = cq.(batcher)
	if r, ok := cq.(dataRegioner); ok {
		// Receive buffers and the first chunk of data buffers (the ones
		// a queue always has once connected): backends that pin memory
		// for fixed buffers pin no more than that. q.mem stays mapped
		// until every core request completed (release).
		end := q.dataOff + q.growBase()*q.dataStride
		if q.smallSize > 0 {
			end = q.smallOff + q.smallGrowBase()*q.smallStride
		}
		r.SetDataRegion(q.mem[:end])
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		q.destroyCore()
		q.release(false)
		l.leaveUnconnected(q)
		l.reject(id, nvme.CMRejectNoResources, "closing")
		return
	}
	l.queues[q] = struct{}{}
	l.wg.Add(1) // the queue, until its teardown (finish)
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(l.ctx, acceptTimeout)
	err = id.Accept(ctx, acceptParam(p))
	cancel()
	if err != nil {
		l.log.Warn("rdma: accept failed", "remote", id.RemoteAddr(), "err", err)
		// The poller tears the queue down (flushes the posted receives).
		q.fatal("accept failed", nil)
	} else {
		q.accepted = true
		l.stats.accepted.Add(1)
		l.stats.queues.Add(1)
		q.log.Debug("rdma: queue connected", "depth", p.depth, "ord", p.ord, "sendq", p.sendQ)
	}
	l.pickGroup().add(q)
}

// reject answers a connect request with the NVMe-oF reject private data
// and closes the ID.
func (l *Listener) reject(id verbs.ConnID, status uint16, why string) {
	l.stats.rejected.Add(1)
	l.log.Debug("rdma: rejecting connect request", "remote", id.RemoteAddr(), "status", status, "why", why)
	if err := id.Reject(rejectData(status)); err != nil {
		l.log.Debug("rdma: reject failed", "err", err)
	}
	_ = id.Close()
}

// removeQueue forgets a queue whose resources are released.
func (l *Listener) removeQueue(q *queue) {
	l.mu.Lock()
	_, ok := l.queues[q]
	if ok {
		q.st.addIO(&l.stats)
	}
	delete(l.queues, q)
	l.mu.Unlock()
	if ok && q.accepted {
		l.stats.queues.Add(^uint64(0))
	}
}

// hostOf is the host part of a "host:port" address (the whole string when
// it has no port): the unit of the per-host unconnected cap.
func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// enterUnconnected counts a new connection from src against the
// unconnected caps; it returns why it may not, or "".
func (l *Listener) enterUnconnected(src string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if m := l.cfg.MaxUnconnectedQueues; m > 0 && l.unconnected >= m {
		return "too many queues without a Fabrics Connect"
	}
	if m := l.cfg.MaxUnconnectedPerHost; m > 0 && l.unconnectedBy[src] >= m {
		return "too many queues without a Fabrics Connect from this host"
	}
	l.unconnected++
	l.unconnectedBy[src]++
	return ""
}

// leaveUnconnectedSrc undoes enterUnconnected(src).
func (l *Listener) leaveUnconnectedSrc(src string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.unconnected--
	if n := l.unconnectedBy[src] - 1; n > 0 {
		l.unconnectedBy[src] = n
	} else {
		delete(l.unconnectedBy, src)
	}
}

// leaveUnconnected stops counting q against the unconnected caps (its
// Connect succeeded, or it ended); idempotent.
func (l *Listener) leaveUnconnected(q *queue) {
	if q.unconn {
		q.unconn = false
		l.leaveUnconnectedSrc(q.src)
	}
}

// refusalLogEvery rate-limits the log lines about refused or timed-out
// unconnected queues (a flood must not flood the log).
const refusalLogEvery = 10 * time.Second

// noteRefusal logs, at most once per refusalLogEvery, that a connection
// was refused or dropped for why, with the number of lines suppressed.
func (l *Listener) noteRefusal(why, src string) {
	l.mu.Lock()
	now := time.Now()
	if now.Sub(l.refusalLog) < refusalLogEvery {
		l.refusalQuiet++
		l.mu.Unlock()
		return
	}
	quiet := l.refusalQuiet
	l.refusalLog, l.refusalQuiet = now, 0
	unconnected := l.unconnected
	l.mu.Unlock()
	l.log.Warn("rdma: "+why, "host", src, "unconnected", unconnected, "suppressed", quiet)
}

// reserveData accounts n more bytes of data buffers against
// Config.MaxDataBufferBytes; must (a queue's first chunk) always succeeds.
func (l *Listener) reserveData(n int, must bool) bool {
	for {
		cur := l.dataBytes.Load()
		if !must && l.cfg.MaxDataBufferBytes > 0 && cur+int64(n) > l.cfg.MaxDataBufferBytes {
			return false
		}
		if l.dataBytes.CompareAndSwap(cur, cur+int64(n)) {
			return true
		}
	}
}

// releaseData returns n bytes reserved by reserveData.
func (l *Listener) releaseData(n int) { l.dataBytes.Add(-int64(n)) }
