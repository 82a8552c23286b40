package mirror

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/internal/freelist"
)

// Config configures a Mirror.
type Config struct {
	// LocalName names the local leg in Membership.Fault and LegStatus.
	LocalName string
	// Local is the local replica: it serves every read.
	Local blockdev.Backend
	// Membership records faults durably. Required.
	Membership Membership
	// RegionBytes is the granularity of the dirty bitmap and of the
	// rebuild's copies and locks: a power of two, at least the block
	// size. 0 means 1 MiB.
	RegionBytes int
	// MaxInFlight bounds the write-class operations in flight at once
	// (their per-I/O state is preallocated); 0 means 256. Beyond it
	// SubmitWrite refuses and blocking calls wait.
	MaxInFlight int
	// Workers is the number of goroutines that run a leg's blocking
	// calls when the leg has no Async path (or refused an I/O, or the
	// operation is not a single-buffer write); 0 means 8.
	Workers int
}

// DefaultRegionBytes is the dirty-region size when Config.RegionBytes is 0.
const DefaultRegionBytes = 1 << 20

// Mirror is a blockdev.Backend over one local leg and up to seven remote
// ones. Create it with New; hand Backend() to the target.
type Mirror struct {
	cfg   Config
	bs    int
	bpr   uint64 // blocks per region
	local *leg

	set      atomic.Pointer[legSet]
	localErr atomic.Pointer[localFault]
	blocks   atomic.Uint64 // local's capacity (changed by Resize)

	locks  regionLocks
	copyMu sync.Mutex // one region copy at a time (the exclusive lock holder)

	resyncing  atomic.Bool                  // a Resync runs
	diverged   atomic.Bool                  // MayDiverge
	resyncProg atomic.Pointer[rebuildState] // the last Resync's, nil before

	ctlMu sync.Mutex // serialises leg-set swaps, fixed registrations, Resize, Plug bookkeeping
	regs  [][]byte   // registered fixed regions by handle-1; nil: free slot

	free    *freelist.List[*op] // idle per-I/O state, MaxInFlight of them
	jobs    chan job            // work for the workers
	settles chan *op            // async operations that need faults recorded
	closed  atomic.Bool
	wg      sync.WaitGroup
}

// New builds a mirror whose only leg is cfg.Local (in sync); add the
// remote legs with AddLeg. It starts the worker goroutines; Close stops
// them.
func New(cfg Config) (*Mirror, error) {
	if cfg.Local == nil || cfg.Membership == nil {
		return nil, errors.New("mirror: Config.Local and Config.Membership are required")
	}
	bs := cfg.Local.BlockSize()
	if cfg.RegionBytes == 0 {
		cfg.RegionBytes = max(DefaultRegionBytes, bs)
	}
	if cfg.RegionBytes < bs || cfg.RegionBytes&(cfg.RegionBytes-1) != 0 {
		return nil, fmt.Errorf("mirror: region size %d is not a power of two of at least the block size %d", cfg.RegionBytes, bs)
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 256
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	m := &Mirror{
		cfg:     cfg,
		bs:      bs,
		bpr:     uint64(cfg.RegionBytes / bs),
		jobs:    make(chan job, cfg.MaxInFlight*(maxLegs+1)),
		settles: make(chan *op, cfg.MaxInFlight),
	}
	m.locks.init()
	m.blocks.Store(cfg.Local.Blocks())
	m.local = newLeg(cfg.LocalName, cfg.Local, newBitmap(0, false))
	m.set.Store(&legSet{entries: []legEntry{{l: m.local, state: InSync}}})
	ops := make([]*op, cfg.MaxInFlight)
	for k := range ops {
		o := &op{m: m, wake: make(chan struct{}, 1)}
		for i := range o.leg {
			o.leg[i] = legDone{o: o, i: uint8(i)}
		}
		ops[k] = o
	}
	m.free = freelist.New(ops)
	m.wg.Add(cfg.Workers + 1)
	for range cfg.Workers {
		go m.worker()
	}
	go m.settler()
	return m, nil
}

// regions returns the regions of blocks [lba, lba+n), n > 0.
func (m *Mirror) regions(lba, n uint64) (r0, r1 uint64) {
	return lba / m.bpr, (lba + n - 1) / m.bpr
}

// nRegions is the bitmap size for a volume of blocks blocks.
func (m *Mirror) nRegions(blocks uint64) uint64 {
	return (blocks + m.bpr - 1) / m.bpr
}

// BlockSize returns the local leg's block size.
func (m *Mirror) BlockSize() int { return m.bs }

// Blocks returns the local leg's capacity.
func (m *Mirror) Blocks() uint64 { return m.blocks.Load() }

// ReadAt reads from the local leg.
func (m *Mirror) ReadAt(bufs [][]byte, lba uint64) error {
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	if err := m.localFailed(); err != nil {
		return err
	}
	return m.local.b.ReadAt(bufs, lba)
}

// check validates a write-class request before anything moves, so that a
// leg's error is always a fault and never a bad request.
func (m *Mirror) check(lba, n uint64) error {
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	if !blockdev.RangeOK(lba, n, m.blocks.Load()) {
		return blockdev.ErrOutOfRange
	}
	return m.localFailed()
}

// WriteAt writes bufs to every leg that is in sync or syncing and returns
// when all have it (and any leg that failed is recorded faulted).
func (m *Mirror) WriteAt(bufs [][]byte, lba uint64, flags blockdev.WriteFlags) error {
	var total uint64
	for _, p := range bufs {
		total += uint64(len(p))
	}
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	if total%uint64(m.bs) != 0 {
		return blockdev.ErrUnaligned
	}
	n := total / uint64(m.bs)
	if err := m.check(lba, n); err != nil || n == 0 {
		return err
	}
	o := m.getOp()
	if o == nil {
		return blockdev.ErrClosed
	}
	o.kind, o.bufs, o.lba, o.n, o.flags = opWrite, bufs, lba, n, flags
	return m.runSync(o)
}

// WriteZeroes zeroes blocks [lba, lba+n) on every in-sync and syncing leg.
func (m *Mirror) WriteZeroes(lba, n uint64) error { return m.ranged(opZeroes, lba, n) }

// Discard discards blocks [lba, lba+n) on every in-sync and syncing leg.
func (m *Mirror) Discard(lba, n uint64) error { return m.ranged(opDiscard, lba, n) }

func (m *Mirror) ranged(k opKind, lba, n uint64) error {
	if err := m.check(lba, n); err != nil || n == 0 {
		return err
	}
	o := m.getOp()
	if o == nil {
		return blockdev.ErrClosed
	}
	o.kind, o.lba, o.n = k, lba, n
	return m.runSync(o)
}

// Flush flushes every in-sync and syncing leg. A write that completed
// before Flush was called completed on every such leg (or the leg was
// recorded faulted first), so each leg's own Flush covers it there.
func (m *Mirror) Flush() error {
	if m.closed.Load() {
		return blockdev.ErrClosed
	}
	if err := m.localFailed(); err != nil {
		return err
	}
	o := m.getOp()
	if o == nil {
		return blockdev.ErrClosed
	}
	o.kind = opFlush
	return m.runSync(o)
}

// Close waits for the operations in flight (including any waiting for a
// fault to be recorded), stops the workers and closes every leg (which
// flushes them). Legs removed with RemoveLeg are the caller's.
//
// A leg's failed Close (its final flush) is judged by what the catalogue
// says of the leg:
//
//   - the local leg: the error is returned (the copy that served reads
//     may have lost writes);
//   - a remote leg whose fault is already recorded (Faulted, no record
//     pending): ignored — its copy is out of sync and the catalogue says
//     so; a vanished replica must not make closing the volume fail;
//   - a remote leg the catalogue may count as in sync (InSync, Syncing,
//     or Faulted with a record pending or failed): its fault is recorded
//     through Membership first (from Close's goroutine, which then
//     blocks for the record); Close returns an error wrapping ErrFenced
//     only when that record fails too.
func (m *Mirror) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return blockdev.ErrClosed
	}
	m.free.Close()
	for range m.cfg.MaxInFlight {
		m.free.Take()
	}
	close(m.jobs)
	close(m.settles)
	m.wg.Wait()
	var errs []error
	type record struct {
		l   *leg
		err error
		ep  *episode
	}
	var recs []record
	for i, e := range m.set.Load().entries {
		err := e.l.b.Close()
		if err == nil {
			continue
		}
		if i == 0 {
			errs = append(errs, fmt.Errorf("mirror: closing local leg %q: %w", e.l.name, err))
			continue
		}
		// Records of several legs run concurrently; nil: recorded already.
		if ep := m.fault(e.l, fmt.Errorf("mirror: leg %q: final flush: %w", e.l.name, err)); ep != nil {
			recs = append(recs, record{e.l, err, ep})
		}
	}
	for _, r := range recs {
		if ferr := m.await(r.l, r.ep); ferr != nil {
			errs = append(errs, fmt.Errorf("mirror: closing leg %q: %w; its fault is not recorded: %w", r.l.name, r.err, ferr))
		}
	}
	return errors.Join(errs...)
}

var (
	_ blockdev.Backend = (*Mirror)(nil)
	_ blockdev.Async   = (*Mirror)(nil)
)
