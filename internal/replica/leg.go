package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/freelist"
)

// Defaults of LegConfig.
const (
	// DefaultIOTimeout bounds one replica I/O.
	DefaultIOTimeout = 30 * time.Second
	// DefaultDepth is the number of I/Os a leg keeps in flight.
	DefaultDepth = 256
	// timeoutTicks is the watchdog's resolution: it ticks every
	// IOTimeout/timeoutTicks, so an I/O fails between IOTimeout and
	// (1+1/timeoutTicks)·IOTimeout after it was submitted.
	timeoutTicks = 4
)

// LegConfig configures Open.
type LegConfig struct {
	// Paths are the replica node's addresses ("10.0.0.2:4420",
	// "tcp://10.0.0.2:4420", "rdma://…"). At least one.
	Paths []string
	// SubNQN is the replica subsystem: catalog.ReplicaNQN(volume).
	SubNQN string
	// HostNQN is the identity the replica admits:
	// catalog.OwnerHostNQN(ownerNode, epoch). It overrides
	// Options.HostNQN.
	HostNQN string
	// NSID is the namespace of the replica subsystem (1); 0 picks the
	// first active one.
	NSID uint32
	// Options configure each controller (provider, transport, queues,
	// DH-HMAC-CHAP secrets, logger…).
	Options initiator.Options
	// IOTimeout: a replica I/O that has not completed this long after
	// it was submitted fails, and with it the leg (see Leg); 0:
	// DefaultIOTimeout.
	IOTimeout time.Duration
	// LossTimeout is how long an I/O waits for a lost replica controller
	// to come back (the session reconnects every ReconnectDelay) before
	// it fails; 0: it fails at once — the mirror faults the leg and a
	// rebuild of the regions written meanwhile catches it up, which
	// costs less than stalling the volume's writes.
	LossTimeout time.Duration
	// ReconnectDelay is the wait between reconnect attempts of a lost
	// path; 0: initiator.DefaultReconnectDelay.
	ReconnectDelay time.Duration
	// Depth is the number of I/Os the leg keeps in flight (async
	// submissions beyond it are refused; blocking calls wait); 0:
	// DefaultDepth.
	Depth int
}

// Errors.
var (
	// ErrTimeout: a replica I/O did not complete within IOTimeout. The
	// leg is down from then on.
	ErrTimeout = errors.New("replica: I/O timed out")
	// ErrDown: the leg stopped after an I/O timed out; open a new one.
	ErrDown = errors.New("replica: leg down")
)

// IOError is a replica I/O that failed: the replica answered an NVMe
// error status, its controller was lost (and did not come back within
// LossTimeout), or the I/O timed out. It wraps blockdev.ErrMedium, so a
// mirror faults the leg, and the cause (an *initiator.StatusError, an
// error wrapping initiator.ErrControllerLost, ErrTimeout, ErrDown).
type IOError struct {
	Leg string // the replica subsystem NQN
	Op  string // "write", "read", "flush", "write zeroes", "deallocate"
	LBA uint64
	Err error
}

func (e *IOError) Error() string {
	if e.Op == "I/O" {
		return fmt.Sprintf("replica %s: %v", e.Leg, e.Err)
	}
	return fmt.Sprintf("replica %s: %s at LBA %d: %v", e.Leg, e.Op, e.LBA, e.Err)
}

// Unwrap yields blockdev.ErrMedium and the cause.
func (e *IOError) Unwrap() []error { return []error{blockdev.ErrMedium, e.Err} }

// Leg is a remote mirror leg: a replica's namespace reached through an
// initiator.Session. It implements blockdev.Backend, blockdev.Async,
// blockdev.AsyncBatcher and blockdev.FixedBuffers; see the package
// documentation.
type Leg struct {
	cfg     LegConfig
	log     *slog.Logger
	s       *initiator.Session
	bs      int
	blocks  uint64
	timeout time.Duration

	slots []slot
	free  *freelist.List[*slot]   // idle slots (Close closes it when it begins refusing I/O)
	done  chan *initiator.Request // completions for the completion goroutine (RequestDone); cap len(slots)

	closeBeg atomic.Bool // Close was called
	closed   atomic.Bool // I/O is refused with ErrClosed
	down     atomic.Pointer[IOError]
	tick     atomic.Uint32 // watchdog ticks
	stop     chan struct{} // stops the watchdog
	wg       sync.WaitGroup
	drainMu  sync.Mutex // serialises drains (Close, UnregisterFixed)

	bmu      sync.Mutex  // guards b
	b        batch       // blockdev.AsyncBatcher (batch.go)
	batching atomic.Bool // bmu's holder is inside a Submitter's Submit or Flush

	fixMu   sync.Mutex // guards regs, nextReg
	regs    map[blockdev.FixedRegion]*initiator.MemRegion
	nextReg blockdev.FixedRegion
}

// Open connects to the replica (returning once one path is live, or with
// the connect error after Options.ConnectTimeout or when ctx ends) and
// starts the leg's completion and watchdog goroutines.
func Open(ctx context.Context, cfg LegConfig) (*Leg, error) {
	if cfg.SubNQN == "" || len(cfg.Paths) == 0 {
		return nil, fmt.Errorf("replica: a leg needs the replica subsystem NQN and at least one path")
	}
	if cfg.IOTimeout <= 0 {
		cfg.IOTimeout = DefaultIOTimeout
	}
	if cfg.Depth <= 0 {
		cfg.Depth = DefaultDepth
	}
	o := cfg.Options
	if cfg.HostNQN != "" {
		o.HostNQN = cfg.HostNQN
	}
	loss := cfg.LossTimeout
	if loss <= 0 {
		loss = time.Nanosecond // fail at once while no path is live
	}
	s, err := initiator.OpenSession(ctx, initiator.SessionOptions{
		Options: o, SubNQN: cfg.SubNQN, Paths: cfg.Paths, NSID: cfg.NSID,
		ReconnectDelay: cfg.ReconnectDelay, CtrlLossTimeout: loss,
	})
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", cfg.SubNQN, err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b, err := newBatch(s)
	if err != nil {
		s.Close()
		return nil, err
	}
	l := &Leg{
		cfg: cfg, log: log, s: s, b: b, bs: s.BlockSize(), blocks: uint64(s.Size()) / uint64(s.BlockSize()),
		timeout: cfg.IOTimeout,
		slots:   make([]slot, cfg.Depth),
		done:    make(chan *initiator.Request, cfg.Depth),
		stop:    make(chan struct{}),
		regs:    map[blockdev.FixedRegion]*initiator.MemRegion{},
	}
	idle := make([]*slot, len(l.slots))
	for i := range l.slots {
		sl := &l.slots[i]
		sl.req.Notify, sl.req.User = l, uint64(i)
		sl.wake = make(chan wakeMsg, 1)
		idle[i] = sl
	}
	l.free = freelist.New(idle)
	l.wg.Add(2)
	go l.completions()
	go l.watchdog(max(cfg.IOTimeout/timeoutTicks, time.Millisecond))
	return l, nil
}

// BlockSize is the replica namespace's logical block size.
func (l *Leg) BlockSize() int { return l.bs }

// Blocks is the replica namespace's capacity in blocks, as found at Open.
func (l *Leg) Blocks() uint64 { return l.blocks }

// Stats returns the session's counters (zero-copy and copied bytes,
// replays…). Any goroutine.
func (l *Leg) Stats() initiator.SessionStats { return l.s.Stats() }

// Paths describes the session's paths to the replica, for status displays.
func (l *Leg) Paths() []initiator.PathInfo { return l.s.Paths() }

// Changed returns a channel closed at the session's next path change
// (a path lost, reconnected, or its ANA state changed). Any goroutine.
func (l *Leg) Changed() <-chan struct{} { return l.s.Changed() }

// Err returns the error the leg is down with (wrapping ErrTimeout), or
// nil while it is up.
func (l *Leg) Err() error {
	if d := l.down.Load(); d != nil {
		return d
	}
	return nil
}

// check validates [lba, lba+n) against the capacity without overflow.
func (l *Leg) check(lba, n uint64) error {
	if lba > l.blocks || n > l.blocks-lba {
		return fmt.Errorf("%w: replica %s: LBA %d + %d blocks, capacity %d", blockdev.ErrOutOfRange, l.cfg.SubNQN, lba, n, l.blocks)
	}
	return nil
}

// vecLen is the byte length of bufs, or an error wrapping
// blockdev.ErrUnaligned when it is not whole blocks.
func (l *Leg) vecLen(bufs [][]byte) (int, error) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	if n%l.bs != 0 {
		return 0, fmt.Errorf("%w: %d bytes, block size %d", blockdev.ErrUnaligned, n, l.bs)
	}
	return n, nil
}

// ReadAt reads from the replica. Blocking; any goroutine.
func (l *Leg) ReadAt(bufs [][]byte, lba uint64) error {
	n, err := l.vecLen(bufs)
	if err != nil {
		return err
	}
	if err := l.check(lba, uint64(n/l.bs)); err != nil || n == 0 {
		return err
	}
	if len(bufs) == 1 {
		return l.do(initiator.IORead, lba, bufs[0], 0, false)
	}
	b := make([]byte, n)
	if err := l.do(initiator.IORead, lba, b, 0, false); err != nil {
		return err
	}
	for _, p := range bufs {
		b = b[copy(p, b):]
	}
	return nil
}

// WriteAt writes to the replica (FUA: durable there on return).
// Blocking; any goroutine.
func (l *Leg) WriteAt(bufs [][]byte, lba uint64, flags blockdev.WriteFlags) error {
	n, err := l.vecLen(bufs)
	if err != nil {
		return err
	}
	if err := l.check(lba, uint64(n/l.bs)); err != nil || n == 0 {
		return err
	}
	fua := flags&blockdev.WriteFUA != 0
	if len(bufs) == 1 {
		return l.do(initiator.IOWrite, lba, bufs[0], 0, fua)
	}
	b := make([]byte, 0, n)
	for _, p := range bufs {
		b = append(b, p...)
	}
	return l.do(initiator.IOWrite, lba, b, 0, fua)
}

// Flush sends an NVMe Flush to the replica. Blocking.
func (l *Leg) Flush() error { return l.do(initiator.IOFlush, 0, nil, 0, false) }

// WriteZeroes sends Write Zeroes for [lba, lba+n). Blocking.
func (l *Leg) WriteZeroes(lba, n uint64) error {
	if err := l.check(lba, n); err != nil || n == 0 {
		return err
	}
	return l.do(initiator.IOWriteZeroes, lba, nil, n, false)
}

// Discard deallocates [lba, lba+n) (Dataset Management). Blocking.
func (l *Leg) Discard(lba, n uint64) error {
	if err := l.check(lba, n); err != nil || n == 0 {
		return err
	}
	return l.do(initiator.IODeallocate, lba, nil, n, false)
}

// Close flushes the replica (unless the leg is down), fails what is
// still in flight, closes the session and waits until every I/O has
// completed (IODone called) and the session holds no reference to any
// caller buffer. The FixedBuffers registrations end with it. A second
// Close returns an error wrapping blockdev.ErrClosed.
func (l *Leg) Close() error {
	if !l.closeBeg.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: replica %s", blockdev.ErrClosed, l.cfg.SubNQN)
	}
	// Nothing may stay held for an Unplug that a caller still owes.
	l.bmu.Lock()
	l.flushLocked()
	l.bmu.Unlock()
	var ferr error
	if l.down.Load() == nil {
		ferr = l.Flush()
	}
	l.closed.Store(true)
	l.free.Close()
	l.s.Close()
	l.drain(func() {})
	close(l.stop)
	close(l.done)
	l.wg.Wait()
	l.fixMu.Lock()
	clear(l.regs)
	l.fixMu.Unlock()
	if errors.Is(ferr, blockdev.ErrClosed) {
		ferr = nil
	}
	return ferr
}

// drain holds every slot — so no I/O is in flight, abandoned ones
// included — while it runs f.
func (l *Leg) drain(f func()) {
	l.drainMu.Lock()
	defer l.drainMu.Unlock()
	held := make([]*slot, 0, len(l.slots))
	for range l.slots {
		held = append(held, l.free.Take())
	}
	f()
	for _, s := range held {
		l.free.Put(s)
	}
}

var _ interface {
	blockdev.Backend
	blockdev.Async
	blockdev.AsyncBatcher
	blockdev.FixedBuffers
} = (*Leg)(nil)
