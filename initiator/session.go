package initiator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// Session defaults (nvme-cli's --reconnect-delay is 10 s and
// --ctrl-loss-tmo 600 s; a block export wants to notice a returning
// target sooner).
const (
	DefaultReconnectDelay  = 2 * time.Second
	DefaultCtrlLossTimeout = 600 * time.Second
)

// ErrSessionClosed: the session was closed by Close.
var ErrSessionClosed = errors.New("initiator: session closed")

// SessionOptions configure OpenSession.
type SessionOptions struct {
	// Options are used for every controller of every path (Provider is
	// required).
	Options
	// SubNQN is the subsystem. Required.
	SubNQN string
	// Paths are the target addresses ("host:port") that reach SubNQN:
	// two listeners of one target, or two targets exporting the same
	// volume. A "tcp://" or "rdma://" prefix sets a path's transport
	// (else Options.Transport), so a path over RDMA may have an
	// alternate over NVMe/TCP. Order is preference among paths of equal ANA state: I/O
	// fails back to an earlier path when it returns. At least one.
	Paths []string
	// NSID is the namespace to serve; 0 picks the first active one.
	NSID uint32
	// ReconnectDelay is the wait between connect attempts of a failed
	// path; default DefaultReconnectDelay.
	ReconnectDelay time.Duration
	// CtrlLossTimeout is how long I/O waits while no path is connected
	// before failing with ErrControllerLost (and EIO); default
	// DefaultCtrlLossTimeout, negative waits forever.
	CtrlLossTimeout time.Duration
}

// PathState is the connection state of one path.
type PathState int32

// Path states.
const (
	PathConnecting PathState = iota // no controller yet, or reconnecting
	PathLive                        // controller connected
	PathClosed                      // session closed
)

func (s PathState) String() string {
	switch s {
	case PathConnecting:
		return "connecting"
	case PathLive:
		return "live"
	case PathClosed:
		return "closed"
	}
	return "unknown"
}

// PathInfo describes one path for status displays.
type PathInfo struct {
	Addr       string
	State      PathState
	ANA        ANAState // meaningful when live
	CNTLID     uint16
	Queues     int
	Connects   int    // successful connects so far
	LastError  string // of the last failure or connect attempt
	Preferred  bool   // the path I/O uses now
	LastChange time.Time
}

// path is one address of the subsystem and its current controller.
type path struct {
	addr string
	kick chan struct{} // ANA re-read requests (buffered 1)

	// Guarded by Session.mu.
	state    PathState
	ctrl     *Controller
	ns       *Namespace
	ana      ANAState
	connects int
	lastErr  error
	changed  time.Time
}

// Session is a namespace reached through one or more paths, each a
// Controller that is reconnected when it fails. Its asynchronous API
// (Submit) and the blocking methods that wrap it (ReadAt, WriteAt,
// WriteFUA, Flush, Deallocate, WriteZeroes) replay each NVMe command that
// failed because its path failed — controller lost, queue pair error,
// keep-alive timeout, ANA inaccessible, queue deleted under it — on the
// best live path, waiting for a reconnect if there is none; callers see
// an error only when no path has been connected for CtrlLossTimeout (then
// an error wrapping ErrControllerLost and syscall.EIO, at once for every
// waiting and later request) or for an error of the command itself (a
// *StatusError).
//
// Replay semantics, per command: a read's data is copied to the caller
// only from an attempt of that command that completed successfully; a
// write or write zeroes whose attempt failed is written again in full
// (block writes are idempotent), so after success the range holds the
// data even if an earlier attempt had partially reached the media. Two
// overlapping writes that are both unacknowledged have no defined order,
// as on any block device.
//
// RegisterBuffer lends it caller memory that requests then use without a
// copy (MemRegion; registered on every controller, also after
// reconnects).
//
// Its methods are safe for concurrent use. It implements nbd.Backend
// with all of nbd's optional interfaces.
type Session struct {
	opts SessionOptions
	log  *slog.Logger

	mu        sync.Mutex // guards paths' fields, changed, downSince, closed, size, bs
	paths     []*path
	changed   chan struct{} // closed and replaced on every path change
	downSince time.Time     // when the last live path went away; zero while one is live
	closed    bool
	size      int64
	bs        int
	nsid      uint32

	done chan struct{} // closed by Close
	wg   sync.WaitGroup

	inFlight  atomic.Int64
	replays   atomic.Uint64
	completed atomic.Uint64 // requests completed (blocking calls included)

	// table is the immutable path table the I/O path reads without a
	// lock; rebuilt by broadcast (under mu) on every path change.
	table  atomic.Pointer[pathTable]
	isShut atomic.Bool // Close has begun

	rmu     sync.Mutex // guards the replay list and rclosed
	rhead   *cmd       // commands waiting for a path (replay list)
	rtail   *cmd
	rclosed bool          // the replay goroutine has stopped
	rwake   chan struct{} // capacity 1: "the replay list is not empty"

	// Zero-copy registrations (memregion.go). regMu serialises
	// RegisterBuffer, MemRegion.Close and the path goroutines' attach and
	// detach of controllers; it guards the fields below.
	regMu         sync.Mutex
	regs          []*MemRegion
	regCtrls      map[*Controller]struct{} // controllers that carry regs
	statCtrls     map[*Controller]struct{} // controllers whose copy counters are not yet retired
	copiedBytes   uint64                   // of retired controllers
	zeroCopyBytes uint64
}

// OpenSession starts a goroutine per path that connects (and reconnects)
// it, and returns once one path is live, or with the last connect error
// when none is within opts.ConnectTimeout (or ctx ends).
func OpenSession(ctx context.Context, opts SessionOptions) (*Session, error) {
	if opts.SubNQN == "" || len(opts.Paths) == 0 {
		return nil, fmt.Errorf("%w: a session needs a subsystem NQN and at least one path", ErrInvalid)
	}
	for _, p := range opts.Paths {
		o := opts.Options
		if _, _, err := checkTransport(p, &o); err != nil {
			return nil, err
		}
	}
	opts.Options = opts.Options.withDefaults()
	if opts.ReconnectDelay <= 0 {
		opts.ReconnectDelay = DefaultReconnectDelay
	}
	if opts.CtrlLossTimeout == 0 {
		opts.CtrlLossTimeout = DefaultCtrlLossTimeout
	}
	s := &Session{opts: opts, log: opts.Logger, changed: make(chan struct{}), done: make(chan struct{}),
		nsid: opts.NSID, downSince: time.Now(), rwake: make(chan struct{}, 1)}
	s.table.Store(&pathTable{})
	for _, a := range opts.Paths {
		s.paths = append(s.paths, &path{addr: a, kick: make(chan struct{}, 1), changed: time.Now()})
	}
	s.wg.Add(1)
	go s.replayLoop()
	for _, p := range s.paths {
		s.wg.Add(1)
		go s.runPath(p)
	}
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	for {
		s.mu.Lock()
		live := false
		refused := 0 // paths whose target refused us for good
		var lastErr error
		for _, p := range s.paths {
			if p.state == PathLive {
				live = true
			}
			if p.lastErr != nil {
				lastErr = p.lastErr
				if permanent(p.lastErr) {
					refused++
				}
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if live {
			return s, nil
		}
		if refused == len(s.paths) {
			// Every target answered "no such subsystem" or "host
			// not allowed" (DNR): waiting will not change that.
			s.Close()
			return nil, fmt.Errorf("initiator: no path to %s connected: %w", opts.SubNQN, lastErr)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			s.Close()
			if lastErr == nil {
				lastErr = ctx.Err()
			}
			return nil, fmt.Errorf("initiator: no path to %s connected: %w", opts.SubNQN, lastErr)
		}
	}
}

// permanent reports whether a path's connect error is the target's
// final answer (a Connect refused with Do Not Retry: unknown subsystem,
// host not allowed; a failed authentication), as opposed to a target that is not up yet.
func permanent(err error) bool {
	var ce *ConnectError
	var ae *AuthError
	return errors.As(err, &ce) && ce.Status.DNR() || errors.As(err, &ae)
}

// broadcast wakes everyone waiting for a path change. s.mu held.
func (s *Session) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
	live := false
	for _, p := range s.paths {
		if p.state == PathLive {
			live = true
		}
	}
	switch {
	case live:
		s.downSince = time.Time{}
	case s.downSince.IsZero():
		s.downSince = time.Now()
	}
	s.rebuildTable()
}

// runPath connects p, waits for its controller to fail, and reconnects
// after ReconnectDelay, until Close.
func (s *Session) runPath(p *path) {
	defer s.wg.Done()
	o := s.opts.Options
	o.onANAChange = func() {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
	first := true
	for {
		if !first {
			t := time.NewTimer(s.opts.ReconnectDelay)
			select {
			case <-t.C:
			case <-s.done:
				t.Stop()
				return
			}
		}
		first = false
		c, ns, ana, err := s.connectPath(p, o)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			p.lastErr = err
			p.changed = time.Now()
			s.broadcast() // OpenSession reports the error
			s.mu.Unlock()
			s.log.Warn("path connect failed", "addr", p.addr, "err", err)
			continue
		}
		// Register the session's MemRegions on c before it carries I/O
		// (also replays): s.mu is not held, regMu is.
		s.mu.Unlock()
		s.attachRegions(c)
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.detachRegions(c)
			c.Close()
			s.retireStats(c)
			return
		}
		p.state, p.ctrl, p.ns, p.ana, p.lastErr = PathLive, c, ns, ana, nil
		p.connects++
		p.changed = time.Now()
		s.broadcast()
		s.mu.Unlock()
		s.log.Info("path live", "addr", p.addr, "cntlid", c.CNTLID(), "ana", ana.String(), "connects", p.connects)
		s.watch(p, c, ns)
		s.mu.Lock()
		p.state, p.ctrl, p.ns = PathConnecting, nil, nil
		if err := c.Err(); err != nil {
			p.lastErr = err
		}
		p.changed = time.Now()
		closed := s.closed
		if closed {
			p.state = PathClosed
		}
		s.broadcast()
		s.mu.Unlock()
		// Waits for this controller's in-flight calls, which fail fast
		// and are replayed on another path or after the reconnect.
		s.detachRegions(c)
		c.Close()
		s.retireStats(c)
		if closed {
			return
		}
		s.log.Warn("path lost; reconnecting", "addr", p.addr, "err", p.lastErrString(s), "delay", s.opts.ReconnectDelay)
	}
}

func (p *path) lastErrString(s *Session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.lastErr == nil {
		return ""
	}
	return p.lastErr.Error()
}

// watch blocks while c is live, re-reading the ANA state on change
// notices and on path errors, until c dies or the session closes.
func (s *Session) watch(p *path, c *Controller, ns *Namespace) {
	for {
		select {
		case <-c.Done():
			return
		case <-s.done:
			return
		case <-p.kick:
			ctx, cancel := context.WithTimeout(context.Background(), s.opts.ConnectTimeout)
			st, err := c.ANAState(ctx, ns.NSID())
			cancel()
			if err != nil {
				s.log.Warn("read ANA state", "addr", p.addr, "err", err)
				continue // a dead controller shows in Done
			}
			s.mu.Lock()
			if p.ana != st {
				s.log.Info("path ANA state", "addr", p.addr, "from", p.ana.String(), "to", st.String())
				p.ana = st
				p.changed = time.Now()
				s.broadcast()
			}
			s.mu.Unlock()
		}
	}
}

// connectPath connects a controller on p and checks that it serves the
// session's namespace with the same geometry.
func (s *Session) connectPath(p *path, o Options) (*Controller, *Namespace, ANAState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.ConnectTimeout)
	defer cancel()
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	c, err := Connect(ctx, p.addr, s.opts.SubNQN, o)
	if err != nil {
		return nil, nil, 0, err
	}
	fail := func(err error) (*Controller, *Namespace, ANAState, error) {
		c.Close()
		return nil, nil, 0, err
	}
	s.mu.Lock()
	nsid, size, bs := s.nsid, s.size, s.bs
	s.mu.Unlock()
	var ns *Namespace
	if nsid == 0 {
		if all := c.Namespaces(); len(all) > 0 {
			ns = all[0]
		} else {
			return fail(fmt.Errorf("%w: %s has no active namespace", ErrNoNamespace, s.opts.SubNQN))
		}
	} else if ns, err = c.Namespace(nsid); err != nil {
		return fail(err)
	}
	if size != 0 && (ns.Size() != size || ns.BlockSize() != bs) {
		return fail(fmt.Errorf("%w: path %s serves namespace %d as %d bytes in %d-byte blocks, the session has %d in %d",
			ErrInvalid, p.addr, ns.NSID(), ns.Size(), ns.BlockSize(), size, bs))
	}
	ana, err := c.ANAState(ctx, ns.NSID())
	if err != nil {
		return fail(err)
	}
	s.mu.Lock()
	if s.size == 0 {
		s.nsid, s.size, s.bs = ns.NSID(), ns.Size(), ns.BlockSize()
	}
	s.mu.Unlock()
	return c, ns, ana, nil
}

// pick returns the namespace of the best usable path: live, ANA optimized
// before non-optimized, earlier in Paths first. With none, it waits for a
// change until CtrlLossTimeout after the last live path went away. Only
// the replay goroutine calls it (the I/O path reads the path table).
func (s *Session) pick() (*path, *Namespace, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, ErrSessionClosed
		}
		if best := s.bestLocked(); best != nil {
			ns := best.ns
			s.mu.Unlock()
			return best, ns, nil
		}
		if err := s.expiredLocked(); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
		ch := s.changed
		var t *time.Timer
		var timer <-chan time.Time
		if s.opts.CtrlLossTimeout > 0 && !s.downSince.IsZero() {
			t = time.NewTimer(time.Until(s.downSince.Add(s.opts.CtrlLossTimeout)))
			timer = t.C
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer:
		case <-s.done:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// Size is the namespace size in bytes.
func (s *Session) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.size
}

// BlockSize is the namespace's logical block size.
func (s *Session) BlockSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bs
}

// NSID is the namespace served.
func (s *Session) NSID() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nsid
}

// InFlight is the number of requests in progress, blocking calls
// included (also those waiting for a path).
func (s *Session) InFlight() int64 { return s.inFlight.Load() }

// Replays counts NVMe commands replayed after a path failure.
func (s *Session) Replays() uint64 { return s.replays.Load() }

// Paths describes every path.
func (s *Session) Paths() []PathInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cur *path
	for _, p := range s.paths {
		if p.state == PathLive && p.ana.usable() && (cur == nil || cur.ana != nvme.ANAStateOptimized && p.ana == nvme.ANAStateOptimized) {
			cur = p
		}
	}
	out := make([]PathInfo, len(s.paths))
	for i, p := range s.paths {
		out[i] = PathInfo{Addr: p.addr, State: p.state, ANA: p.ana, Connects: p.connects, Preferred: p == cur, LastChange: p.changed}
		if p.ctrl != nil {
			out[i].CNTLID = p.ctrl.CNTLID()
			out[i].Queues = p.ctrl.NumQueues()
		}
		if p.lastErr != nil {
			out[i].LastError = p.lastErr.Error()
		}
	}
	return out
}

// Changed returns a channel closed at the next path change (state or
// ANA), for tests and status displays.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Close stops reconnecting, fails waiting calls with ErrSessionClosed,
// closes every controller and waits for the path goroutines.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.isShut.Store(true)
	close(s.done)
	s.broadcast()
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}
