package file

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// Ring group defaults.
const (
	// DefaultGroupRingEntries is the submission queue size of each shared
	// ring: how many entries (I/Os, or pieces of large ones) all the
	// volumes on one ring keep in flight together (beyond it Submit*
	// return false and the blocking path takes the I/O).
	DefaultGroupRingEntries = 4096
	// FixedTableEntries is the default size of each shared ring's sparse
	// fixed-buffer table: the 1 GiB pieces of all regions registered on
	// that ring at once, by all its volumes (identical regions share
	// entries).
	FixedTableEntries = 1024
)

// stopTag is the user data of the NOP that stops a reaper.
const stopTag = ^uint64(0)

// RingGroup is a set of io_uring instances shared by many file backends
// (Options.Rings), each with one reaper goroutine. Threads and
// descriptors it uses depend on the number of rings, not of volumes.
// A process normally uses the default group (Options.Rings nil).
type RingGroup struct {
	rings []*sharedRing
	next  atomic.Uint32 // round-robin cursor for Open

	mu     sync.Mutex // guards users, closed
	users  int        // backends attached and not closed
	closed bool
}

// NewRingGroup sets up a ring group. It fails with an error wrapping
// uring.ErrUnsupported where the kernel refuses io_uring.
func NewRingGroup(opts GroupOptions) (*RingGroup, error) {
	n := opts.Rings
	if n <= 0 {
		n = nbsys.Procs() // GOMAXPROCS without the Ps kept for sleeping pollers
	}
	entries := opts.Entries
	if entries <= 0 {
		entries = DefaultGroupRingEntries
	}
	fixed := opts.FixedEntries
	if fixed <= 0 {
		fixed = FixedTableEntries
	}
	if fixed > 1<<14 { // IORING_MAX_REG_BUFFERS
		return nil, fmt.Errorf("%w: %d fixed-buffer entries, at most %d", ErrInvalidOptions, fixed, 1<<14)
	}
	g := &RingGroup{}
	for range n {
		r, err := uring.New(entries)
		if err != nil {
			g.stop()
			return nil, err
		}
		g.rings = append(g.rings, newSharedRing(r, fixed))
	}
	return g, nil
}

var (
	defaultMu      sync.Mutex // guards the four below
	defaultOpts    GroupOptions
	defaultGroupP  *RingGroup
	defaultGroupEr error
	defaultMade    bool
)

// ErrGroupConfigured: ConfigureDefaultRingGroup was called after the
// default group was created.
var ErrGroupConfigured = errors.New("file: default ring group already created")

// ConfigureDefaultRingGroup sets the options of the default group (the
// daemon's configuration: rings per process, entries per ring). It must
// be called before the first Open that uses it; later it fails with
// ErrGroupConfigured.
func ConfigureDefaultRingGroup(opts GroupOptions) error {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if defaultMade {
		return ErrGroupConfigured
	}
	defaultOpts = opts
	return nil
}

// DefaultRingGroup returns the process-wide group that backends opened
// without Options.Rings share: by default nbsys.Procs() rings (GOMAXPROCS at the time
// of the first call, without Ps kept for sleeping pollers) of DefaultGroupRingEntries (see
// ConfigureDefaultRingGroup). It is created at first use and never
// closed. The error is that of the first creation (no io_uring); it is
// not retried.
func DefaultRingGroup() (*RingGroup, error) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if !defaultMade {
		defaultMade = true
		defaultGroupP, defaultGroupEr = NewRingGroup(defaultOpts)
	}
	return defaultGroupP, defaultGroupEr
}

// Rings returns the number of rings in the group.
func (g *RingGroup) Rings() int { return len(g.rings) }

// attach picks a ring for a new backend, or nil when the group is closed.
func (g *RingGroup) attach() *sharedRing {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || len(g.rings) == 0 {
		return nil
	}
	g.users++
	return g.rings[int(g.next.Add(1)-1)%len(g.rings)]
}

func (g *RingGroup) detach() {
	g.mu.Lock()
	g.users--
	g.mu.Unlock()
}

// ErrGroupBusy: RingGroup.Close was called while backends still use it.
var ErrGroupBusy = errors.New("file: ring group still has open backends")

// Close stops the group's reapers and releases its rings. Every backend
// opened on it must have been closed first (ErrGroupBusy otherwise).
// Closing the default group is refused the same way while it is in use;
// it is meant to live as long as the process.
func (g *RingGroup) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	if g.users > 0 {
		return fmt.Errorf("%w (%d)", ErrGroupBusy, g.users)
	}
	g.closed = true
	g.stop()
	return nil
}

func (g *RingGroup) stop() {
	for _, r := range g.rings {
		r.stop()
	}
}

// sharedRing is one io_uring instance of a group: a slot per possible
// in-flight I/O (whichever backend submitted it), a fixed-buffer table
// shared by its backends, and one reaper goroutine that routes every
// completion to the backend that submitted it.
//
// Completions are consumed under reapMu, by the reaper or inline: when an
// Unplug's submission finds completions already posted (a RAM-backed
// device such as brd completes during io_uring_enter), Unplug hands them
// to their backends right there, on the submitting goroutine (for the
// target: the poll group, which then answers them in its next pass with
// no goroutine hand-off). The reaper waits in Go's network poller on an
// eventfd the kernel signals per completion (IORING_REGISTER_EVENTFD), not
// in io_uring_enter: a thread blocked in the kernel would be woken for
// every completion, even those handled inline, and then compete with the
// submitter for a P. Where the eventfd cannot be set up it falls back to
// io_uring_enter(GETEVENTS) and there is no inline reaping.
type sharedRing struct {
	ring *uring.Ring

	reapMu  sync.Mutex  // serialises consuming the CQ (reaper, inline reaps)
	cqes    []uring.CQE // completions being handled; guarded by reapMu
	sawStop atomic.Bool // the stop NOP was reaped
	// unmapped: stop closed the ring (reapMu): a Poll that comes after
	// its backend's Close finds nothing to reap instead of a freed CQ.
	unmapped bool
	evf      *os.File // the eventfd the kernel signals; nil: blocking Wait
	evrc     syscall.RawConn
	evRead   func(fd uintptr) bool // reads the eventfd; made once (no allocation per wait)
	evBuf    [8]byte
	// clearFn reads the eventfd once without waiting (reapInline, under
	// reapMu, through evrc.Control) into clearBuf; cleared says it took a
	// count.
	clearFn  func(fd uintptr)
	clearBuf [8]byte
	cleared  bool
	clears   atomic.Uint64    // clearFn reads made (tests): only where PauseEventFD is not available
	pokeFn   func(fd uintptr) // adds 1 to the eventfd (reapInline, when the reaper must look again)
	pokes    atomic.Uint64    // pokeFn writes made (tests)
	evErr    error
	inline   atomic.Uint64 // completions handled inline by Unplug (tests, stats)

	mu      sync.Mutex // guards the ring's submission side, slots, free, plugged, stopping
	slots   []asyncSlot
	free    []uint32
	plugged int // backends on this ring with an outstanding Plug: the reaper leaves the SQ to their Unplug
	stopped bool

	fixed fixedTable // fixed buffers (async_fixed_linux.go)

	done chan struct{} // closed when the reaper exited
}

// asyncSlot is one in-flight io_uring entry: a whole I/O, or one piece of
// an I/O larger than its backend's maxPiece. The first piece's slot (the
// head) describes the whole I/O; the other pieces' slots only name it.
type asyncSlot struct {
	b     *Backend
	c     blockdev.Completion // head only
	buf   []byte              // the whole I/O's buffer (head only)
	off   int64               // the whole I/O's offset (head only)
	write bool
	fixed bool // submitted as READ_FIXED / WRITE_FIXED
	flags blockdev.WriteFlags
	n     int    // bytes this entry transfers
	head  uint32 // another piece's head: its slot index + 1; 0 on the head itself
	parts int    // head: entries of the I/O not yet reaped
	short bool   // head: an entry of the I/O did not transfer all of its bytes
}

func newSharedRing(r *uring.Ring, fixedEntries int) *sharedRing {
	a := &sharedRing{ring: r, done: make(chan struct{}), cqes: make([]uring.CQE, 128)}
	a.fixed.size = fixedEntries
	n := r.Entries()
	a.slots = make([]asyncSlot, n)
	a.free = make([]uint32, n)
	for i := range a.free {
		a.free[i] = uint32(n - 1 - i)
	}
	a.setupEventFD()
	go a.reap()
	return a
}

// setupEventFD registers a non-blocking eventfd with the ring and wraps it
// for Go's poller; on any failure the reaper uses io_uring_enter instead.
func (a *sharedRing) setupEventFD() {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return
	}
	if a.ring.RegisterEventFD(fd) != nil {
		_ = unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "io_uring-eventfd")
	rc, err := f.SyscallConn()
	if err != nil {
		// The ring keeps signalling fd: keep it open, poll it no more.
		return
	}
	a.evf, a.evrc = f, rc
	// A spinning NVMe/TCP reader stops for a completion signalled here
	// (internal/nbsys parked set).
	_ = nbsys.WatchParked(fd, nbsys.ParkedIn)
	// The eventfd is non-blocking: its reads go through internal/nbsys,
	// which does not wake the runtime's monitor thread per completion.
	a.evRead = func(fd uintptr) bool {
		for {
			_, e := nbsys.Read(fd, a.evBuf[:])
			switch e {
			case 0:
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			default:
				a.evErr = e
			}
			return true
		}
	}
	a.clearFn = func(fd uintptr) {
		a.clears.Add(1)
		n, e := nbsys.Read(fd, a.clearBuf[:])
		a.cleared = e == 0 && n == 8
	}
	one := [8]byte{1}
	a.pokeFn = func(fd uintptr) { nbsys.Write(fd, one[:]) }
}

// wait returns when completions may be waiting. Reaper only.
func (a *sharedRing) wait() error {
	if a.evrc == nil {
		return a.ring.Wait()
	}
	a.evErr = nil
	if err := a.evrc.Read(a.evRead); err != nil {
		return err
	}
	return a.evErr
}

// reap is the ring's completion goroutine: it waits for completions and
// finishes each I/O on the backend that submitted it. It exits once the
// stop NOP was reaped (by it or inline).
func (a *sharedRing) reap() {
	defer close(a.done)
	for !a.sawStop.Load() {
		if err := a.wait(); err != nil {
			// Not expected (EBADF, EFAULT); keep the I/O path alive.
			runtime.Gosched()
			continue
		}
		a.reapMu.Lock()
		a.drainLocked()
		a.reapMu.Unlock()
	}
}

// reapInline handles the completions already posted, on the calling
// goroutine, unless the reaper is handling some right now (it then takes
// these too). Called by Unplug after its submission; paused says Unplug
// paused the eventfd's signals around it (uring.Ring.PauseEventFD), which
// reapInline resumes.
//
// Paused, the completions the submission posted raise no signal, so there
// is no count to take back afterwards: one system call fewer per inline
// reap than the eventfd read the unpaused path needs. The price is that
// whatever was posted while paused must be looked at after the resume —
// by this goroutine, or, when the reaper holds reapMu (its last look may
// have come before those completions), by the reaper, which a write to
// the eventfd sends round once more — only if the CQ still holds
// something after the resume (a full barrier): an empty CQ means the
// reaper already took what was posted unsignalled. (The holder may also
// be this goroutine's own caller: an Unplug from a completion callback
// inside drainLocked, which may already have made its last look — the
// write is what sends it round again.)
//
// An inline drain may also take the stop NOP (stop), whose signal the
// pause suppressed or the read-back took: the reaper, asleep on the
// eventfd, must then be woken to see sawStop and exit.
func (a *sharedRing) reapInline(paused bool) int {
	if a.evrc == nil {
		return 0
	}
	if !a.reapMu.TryLock() {
		if paused {
			a.ring.ResumeEventFD()
			if a.ring.Posted() {
				a.poke()
			}
		}
		return 0
	}
	if a.unmapped { // only a Poll gets here so late (never paused)
		a.reapMu.Unlock()
		return 0
	}
	n := a.drainLocked()
	if paused {
		a.ring.ResumeEventFD()
		n += a.drainLocked() // posted unsignalled between the drain and the resume
	} else if n > 0 {
		// The kernel signalled the eventfd for each completion just taken:
		// consume the count, so that the reaper is not woken for nothing
		// (an epoll_wait that has not collected the event yet re-checks the
		// eventfd and drops it). A count taken here may also belong to a
		// completion posted after that drain: the kernel commits the CQ
		// tail before it signals, so it is visible now — drain again, or it
		// would wait for a wake-up that this read took away.
		a.cleared = false
		if a.evrc.Control(a.clearFn) == nil && a.cleared {
			n += a.drainLocked()
		}
	}
	a.reapMu.Unlock()
	if n > 0 {
		a.inline.Add(uint64(n))
		if a.sawStop.Load() {
			a.poke()
		}
	}
	return n
}

// poke adds 1 to the eventfd: the reaper looks at the CQ (and sawStop)
// once more.
func (a *sharedRing) poke() {
	a.pokes.Add(1)
	_ = a.evrc.Control(a.pokeFn)
}

// drainLocked finishes every completion the CQ holds, each on the backend
// that submitted it, and returns how many it took. reapMu held. Backends'
// completion callbacks run here; one that submits again takes a.mu, never
// reapMu (an Unplug inside one finds reapMu taken and leaves the reaping
// to this loop).
func (a *sharedRing) drainLocked() int {
	total := 0
	for {
		n := a.ring.Reap(a.cqes)
		total += n
		for _, c := range a.cqes[:n] {
			if c.UserData == stopTag {
				a.sawStop.Store(true)
				continue
			}
			i := uint32(c.UserData)
			a.mu.Lock()
			p := &a.slots[i]
			p.b.inflight--
			h := i
			if p.head != 0 {
				h = p.head - 1
			}
			hs := &a.slots[h]
			if c.Res < 0 || int(c.Res) != p.n {
				hs.short = true
			}
			if h != i {
				*p = asyncSlot{}
				a.free = append(a.free, i)
			}
			if hs.parts--; hs.parts > 0 {
				a.mu.Unlock()
				continue // the I/O's other pieces are still in flight
			}
			s := *hs
			*hs = asyncSlot{}
			a.free = append(a.free, h)
			a.mu.Unlock()
			if s.short {
				redoOffReaper(s)
				continue
			}
			s.b.finishAsync(&s)
			s.c.IODone(nil)
			s.b.mu.RUnlock()
		}
		if n < len(a.cqes) {
			break
		}
	}
	a.mu.Lock()
	if a.plugged == 0 {
		_, _ = a.ring.Submit() // entries a failed io_uring_enter left behind
	}
	a.mu.Unlock()
	return total
}

// redoOffReaper finishes an I/O the ring did not complete through the
// blocking path, on a goroutine of its own, so that one volume's slow
// error path does not hold up the completions of the others on the ring.
// (A function of its own so that only this rare path allocates.)
func redoOffReaper(s asyncSlot) {
	go func() {
		err := s.b.redoAsync(&s)
		s.c.IODone(err)
		s.b.mu.RUnlock()
	}()
}

// stop ends the reaper and releases the ring; nothing may be in flight.
func (a *sharedRing) stop() {
	a.mu.Lock()
	a.stopped = true
	err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: stopTag})
	if err == nil {
		_, err = a.ring.Submit()
	}
	a.mu.Unlock()
	if err == nil {
		<-a.done
		a.reapMu.Lock()
		a.unmapped = true
		_ = a.ring.Close()
		if a.evf != nil {
			_ = a.evf.Close()
		}
		a.reapMu.Unlock()
	}
	// Otherwise the reaper stays parked on a ring with nothing in flight;
	// leaking it is safer than unmapping under it.
}
