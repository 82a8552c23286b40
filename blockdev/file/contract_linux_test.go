package file

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
)

// opener opens files in t.TempDir for the contract suite, remembers each
// test's path for Reopen, and keeps the backends for later inspection.
type opener struct {
	opts  Options
	tweak func(*Backend) // applied after each Open, e.g. to force fallbacks

	mu       sync.Mutex
	paths    map[*testing.T]string // guarded by mu
	backends []*Backend            // guarded by mu
}

func newOpener(opts Options, tweak func(*Backend)) *opener {
	return &opener{opts: opts, tweak: tweak, paths: make(map[*testing.T]string)}
}

func (o *opener) open(t *testing.T, blocks uint64, bs int) blockdev.Backend {
	path := filepath.Join(t.TempDir(), "vol")
	opts := o.opts
	opts.Size = int64(blocks) * int64(bs)
	opts.BlockSize = bs
	b, err := Open(path, opts)
	if errors.Is(err, ErrDirectUnsupported) {
		t.Skipf("filesystem of %s refuses O_DIRECT", path)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if o.tweak != nil {
		o.tweak(b)
	}
	o.mu.Lock()
	o.paths[t] = path
	o.backends = append(o.backends, b)
	o.mu.Unlock()
	return b
}

func (o *opener) reopen(t *testing.T) blockdev.Backend {
	o.mu.Lock()
	path, ok := o.paths[t]
	o.mu.Unlock()
	if !ok {
		t.Fatal("reopen without open")
	}
	opts := o.opts
	opts.Size = 0 // the existing size
	// The block size is not recorded in the file: the suite asks for the
	// same geometry, so take it from the last open.
	o.mu.Lock()
	opts.BlockSize = o.backends[len(o.backends)-1].BlockSize()
	o.mu.Unlock()
	b, err := Open(path, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if o.tweak != nil {
		o.tweak(b)
	}
	return b
}

func (o *opener) stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	var s Stats
	for _, b := range o.backends {
		x := b.Stats()
		s.DirectIOs += x.DirectIOs
		s.BufferedIOs += x.BufferedIOs
		s.DirectRefused += x.DirectRefused
		s.FUANative += x.FUANative
		s.FUAEmulated += x.FUAEmulated
		s.ZeroWrites += x.ZeroWrites
		s.AsyncIOs += x.AsyncIOs
		s.FixedIOs += x.FixedIOs
	}
	return s
}

// fileCaps are the capabilities every file backend exposes (the methods
// refuse at run time when there is no fast path).
const fileCaps = blockdevtest.CapAsync | blockdevtest.CapAsyncBatcher | blockdevtest.CapFixedBuffers | blockdevtest.CapResizer | blockdevtest.CapPoller

func runContract(t *testing.T, o *opener) Stats {
	blockdevtest.Run(t, o.open, blockdevtest.Caps{Persistent: true, Reopen: o.reopen, Capabilities: fileCaps})
	s := o.stats()
	t.Logf("%+v", s)
	return s
}

func TestContractDirectOn(t *testing.T) {
	s := runContract(t, newOpener(Options{Direct: DirectOn}, nil))
	if t.Skipped() {
		return
	}
	if s.DirectIOs == 0 || s.BufferedIOs == 0 {
		t.Errorf("want both paths exercised, got %+v", s)
	}
	if s.FUANative == 0 {
		t.Errorf("no FUA write used RWF_DSYNC: %+v", s)
	}
	if s.AsyncIOs == 0 || s.FixedIOs == 0 {
		t.Errorf("the Resize test took no async or no fixed I/O: %+v", s)
	}
}

func TestContractDirectAuto(t *testing.T) {
	runContract(t, newOpener(Options{}, nil))
}

func TestContractDirectOff(t *testing.T) {
	s := runContract(t, newOpener(Options{Direct: DirectOff}, nil))
	if s.DirectIOs != 0 || s.BufferedIOs == 0 {
		t.Errorf("DirectOff: %+v", s)
	}
}

// TestContractWithoutFilesystemSupport runs the suite as if the
// filesystem had neither RWF_DSYNC nor any fallocate mode.
func TestContractWithoutFilesystemSupport(t *testing.T) {
	s := runContract(t, newOpener(Options{}, func(b *Backend) {
		b.noDSync.Store(true)
		b.noZeroRange.Store(true)
		b.noPunchHole.Store(true)
	}))
	if s.FUANative != 0 || s.FUAEmulated == 0 {
		t.Errorf("FUA not emulated: %+v", s)
	}
	if s.ZeroWrites == 0 {
		t.Errorf("zeroes not written: %+v", s)
	}
}

// TestContractPunchHoleOnly: no ZERO_RANGE, so WriteZeroes punches holes.
func TestContractPunchHoleOnly(t *testing.T) {
	s := runContract(t, newOpener(Options{Direct: DirectOff}, func(b *Backend) {
		b.noZeroRange.Store(true)
	}))
	if s.ZeroWrites != 0 {
		t.Errorf("zeroes written although PUNCH_HOLE works: %+v", s)
	}
}
