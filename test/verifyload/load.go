package verifyload

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Target is a block device as the load sees it: ReadAt and WriteAt
// transfer all of p at off or return an error.
type Target interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
}

// FUAWriter is a Target that can write with force-unit-access; see
// Config.FUAEvery.
type FUAWriter interface {
	WriteFUA(p []byte, off int64) error
}

// Flusher is a Target that can flush its write cache; see
// Config.FlushEvery.
type Flusher interface {
	Flush() error
}

// Config shapes a Load. Zero fields take the defaults noted.
type Config struct {
	BlockSize int           // bytes per operation; 4096 when 0
	Slots     int           // blocks per worker region; 16 when 0
	Timeout   time.Duration // how long WaitOps waits; 30s when 0
	// FUAEvery, when > 0, makes a worker's i-th write (from 0) a WriteFUA
	// when i%FUAEvery == FUAEvery-1; the worker's target must be a FUAWriter.
	FUAEvery int
	// FlushEvery, when > 0, makes a worker flush after its i-th verified
	// write when i%FlushEvery == FlushEvery-1; the target must be a Flusher.
	FlushEvery int
}

// Load is a running verifying load; see the package documentation.
type Load struct {
	t       testing.TB
	cfg     Config
	targets []Target
	stop    chan struct{}
	wg      sync.WaitGroup

	mu    sync.Mutex
	acked map[int64][]byte // offset → last acknowledged content

	ops      atomic.Int64
	progress chan struct{} // capacity 1: signalled after each operation
	failOnce sync.Once
	failed   chan struct{} // closed when a worker fails
}

// Start starts one worker per element of workers; worker w owns blocks
// [w*Slots, (w+1)*Slots) and does all its I/O through workers[w]. Finish
// re-reads through the last element. Several workers may share a target.
func Start(t testing.TB, cfg Config, workers []Target) *Load {
	t.Helper()
	if cfg.BlockSize == 0 {
		cfg.BlockSize = 4096
	}
	if cfg.Slots == 0 {
		cfg.Slots = 16
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	if len(workers) == 0 {
		t.Fatal("verifyload: no workers")
	}
	for w, tg := range workers {
		if _, ok := tg.(FUAWriter); cfg.FUAEvery > 0 && !ok {
			t.Fatalf("verifyload: worker %d: target %T cannot WriteFUA", w, tg)
		}
		if _, ok := tg.(Flusher); cfg.FlushEvery > 0 && !ok {
			t.Fatalf("verifyload: worker %d: target %T cannot Flush", w, tg)
		}
	}
	l := &Load{
		t: t, cfg: cfg, targets: workers, stop: make(chan struct{}),
		acked: map[int64][]byte{}, progress: make(chan struct{}, 1), failed: make(chan struct{}),
	}
	for w, tg := range workers {
		l.wg.Add(1)
		go l.run(tg, w)
	}
	return l
}

// Repeat returns a slice of n copies of tg, for Start.
func Repeat(tg Target, n int) []Target {
	out := make([]Target, n)
	for i := range out {
		out[i] = tg
	}
	return out
}

// fail reports a worker failure and wakes WaitOps.
func (l *Load) fail(format string, args ...any) {
	l.t.Errorf(format, args...)
	l.failOnce.Do(func() { close(l.failed) })
}

func (l *Load) run(tg Target, w int) {
	defer l.wg.Done()
	bs, slots := l.cfg.BlockSize, l.cfg.Slots
	got := make([]byte, bs)
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		off := int64(w*slots+i%slots) * int64(bs)
		p := make([]byte, bs)
		for k := 0; k < bs; k += 8 {
			binary.LittleEndian.PutUint64(p[k:], uint64(w)<<48|uint64(i)<<16|uint64(k))
		}
		var err error
		if n := l.cfg.FUAEvery; n > 0 && i%n == n-1 {
			err = tg.(FUAWriter).WriteFUA(p, off)
		} else {
			_, err = tg.WriteAt(p, off)
		}
		if err != nil {
			l.fail("worker %d: write at %d: %v", w, off, err)
			return
		}
		l.mu.Lock()
		l.acked[off] = p
		l.mu.Unlock()
		if _, err := tg.ReadAt(got, off); err != nil {
			l.fail("worker %d: read at %d: %v", w, off, err)
			return
		}
		if !bytes.Equal(got, p) {
			l.fail("worker %d: read at %d is not the last acknowledged write", w, off)
			return
		}
		if n := l.cfg.FlushEvery; n > 0 && i%n == n-1 {
			if err := tg.(Flusher).Flush(); err != nil {
				l.fail("worker %d: flush: %v", w, err)
				return
			}
		}
		l.ops.Add(1)
		select {
		case l.progress <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// Ops returns the number of verified operations so far.
func (l *Load) Ops() int64 { return l.ops.Load() }

// WaitOps waits until n more operations completed. It fails the test at
// once when a worker failed, and with a stall message after Config.Timeout.
// Only one goroutine may wait at a time.
func (l *Load) WaitOps(n int64) {
	l.t.Helper()
	target := l.ops.Load() + n
	deadline := time.NewTimer(l.cfg.Timeout)
	defer deadline.Stop()
	for l.ops.Load() < target {
		select {
		case <-l.progress:
		case <-l.failed:
			l.t.FailNow()
		case <-deadline.C:
			l.t.Fatalf("load stalled at %d ops", l.ops.Load())
		}
	}
}

// Finish stops the workers, waits for them, and re-reads every
// acknowledged block through the last worker's target.
func (l *Load) Finish() {
	l.t.Helper()
	close(l.stop)
	l.wg.Wait()
	tg := l.targets[len(l.targets)-1]
	got := make([]byte, l.cfg.BlockSize)
	for off, want := range l.acked {
		if _, err := tg.ReadAt(got, off); err != nil {
			l.t.Fatalf("final read at %d: %v", off, err)
		}
		if !bytes.Equal(got, want) {
			l.t.Fatalf("final read at %d differs from the last acknowledged write", off)
		}
	}
}
