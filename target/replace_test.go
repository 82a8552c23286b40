package target

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestReplaceNamespaceBackend: the backend under a namespace is swapped
// with the namespace attached: same NSID and identifiers, I/O goes to
// the new backend, no Namespace Attribute Changed event for a swap of
// the same size, the event for a larger one, and a smaller or
// differently sized block is refused.
func TestReplaceNamespaceBackend(t *testing.T) {
	a, b := mem.New(64, 512), mem.New(64, 512)
	if err := b.WriteAt([][]byte{bytes.Repeat([]byte{0xB}, 512)}, 3, 0); err != nil {
		t.Fatal(err)
	}
	nguid := [16]byte{0: 0x12, 15: 0x34}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: a, NGUID: nguid})
	s.admin.setFeature(nvme.FeatAsyncEventConfig, nvme.AECNSAttr, nvme.StatusSuccess)
	aer, done := s.admin.aer()
	if done {
		t.Fatal("AER completed")
	}
	before := s.admin.identify(nvme.CNSNamespace, 1, nvme.StatusSuccess)

	if err := s.sub.ReplaceNamespaceBackend(1, b); err != nil {
		t.Fatal(err)
	}
	s.admin.noCompletion() // no event: the namespace did not change
	if l := nvme.ParseNSList(s.admin.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 0 {
		t.Fatalf("changed namespace list %v after a same-size swap", l)
	}
	if after := s.admin.identify(nvme.CNSNamespace, 1, nvme.StatusSuccess); !bytes.Equal(before, after) {
		t.Fatal("Identify Namespace changed across the swap")
	}
	if ids := s.sub.Namespaces(); len(ids) != 1 || ids[0] != 1 {
		t.Fatalf("namespaces %v", ids)
	}
	buf := make([]byte, 512)
	s.io.expect(rw(nvme.IORead, 1, 3, 1, 0), buf, nvme.StatusSuccess)
	if buf[0] != 0xB {
		t.Fatal("read did not reach the new backend")
	}
	s.io.expect(rw(nvme.IOWrite, 1, 5, 1, 0), bytes.Repeat([]byte{0xC}, 512), nvme.StatusSuccess)
	got := make([]byte, 512)
	if err := b.ReadAt([][]byte{got}, 5); err != nil || got[0] != 0xC {
		t.Fatalf("write not on the new backend (%v)", err)
	}
	if err := a.ReadAt([][]byte{got}, 5); err != nil || got[0] == 0xC {
		t.Fatalf("write reached the old backend (%v)", err)
	}

	if err := s.sub.ReplaceNamespaceBackend(1, mem.New(32, 512)); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("smaller backend: %v", err)
	}
	if err := s.sub.ReplaceNamespaceBackend(1, mem.New(64, 4096)); !errors.Is(err, ErrBadBackend) {
		t.Fatalf("other block size: %v", err)
	}
	if err := s.sub.ReplaceNamespaceBackend(2, mem.New(64, 512)); !errors.Is(err, ErrNoNamespace) {
		t.Fatalf("missing namespace: %v", err)
	}
	if err := s.sub.ReplaceNamespaceBackend(1, nil); !errors.Is(err, ErrBadBackend) {
		t.Fatalf("nil backend: %v", err)
	}
	s.admin.noCompletion()

	// A larger backend: the hosts re-read Identify (NSZE).
	if err := s.sub.ReplaceNamespaceBackend(1, mem.New(128, 512)); err != nil {
		t.Fatal(err)
	}
	s.admin.wait(aer)
	if dw0 := aer.CQE.DW0(); dw0 != nvme.MakeAsyncEventResult(nvme.AsyncEventTypeNotice, nvme.AsyncEventNoticeNSChanged, nvme.LogChangedNSList) {
		t.Fatalf("AER result %#x", dw0)
	}
	id, err := nvme.ParseIdentifyNamespace(s.admin.identify(nvme.CNSNamespace, 1, nvme.StatusSuccess))
	if err != nil || id.NSZE != 128 || id.NGUID != nguid {
		t.Fatalf("Identify after a larger swap: NSZE %d NGUID %x (%v)", id.NSZE, id.NGUID, err)
	}
}

// TestReplaceNamespaceBackendDrains: a command in flight on the old
// backend finishes there and the swap waits for it; commands issued
// once the swap is published run on the new backend meanwhile.
func TestReplaceNamespaceBackendDrains(t *testing.T) {
	hb := heldBackend()
	release := sync.OnceFunc(func() { close(hb.hold) })
	defer release() // a failing test must not leave the read held
	nb := &countingBackend{Backend: mem.New(64, 512)}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: hb})
	r, done := s.io.submit(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512))
	if done {
		t.Fatal("completed inline")
	}
	waitEntered(t, hb)
	// The swap's goroutine notes whether the old backend's call had
	// finished at the moment the swap returned.
	replaced := make(chan error, 1)
	var drainedFirst atomic.Bool
	go func() {
		err := s.sub.ReplaceNamespaceBackend(1, nb)
		drainedFirst.Store(hb.readDone.Load())
		replaced <- err
	}()
	// Loop until the swap is published: a flush counted by the new
	// backend. The held backend would block a read, so flushes probe.
	var fl nvme.SQE
	fl.SetFlush(1)
	for nb.flushes.Load() == 0 {
		s.io.expect(fl, nil, nvme.StatusSuccess)
		select {
		case err := <-replaced:
			t.Fatalf("ReplaceNamespaceBackend returned (%v) with a read in flight", err)
		default:
		}
	}
	select {
	case err := <-replaced:
		t.Fatalf("ReplaceNamespaceBackend returned (%v) with a read in flight", err)
	default:
	}
	release()
	select {
	case err := <-replaced:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(safety):
		t.Fatal("ReplaceNamespaceBackend never returned")
	}
	if !drainedFirst.Load() {
		t.Fatal("ReplaceNamespaceBackend returned before the old backend's call finished")
	}
	s.io.wait(r)
	if !r.Status().OK() {
		t.Fatalf("the read in flight across the swap: %v", r.Status())
	}
}

// TestReplaceNamespaceBackendInaccessible: the swap a role change makes
// — the path turned inaccessible first — lets no I/O reach either
// backend until the path is accessible again, and then only the new one.
func TestReplaceNamespaceBackendInaccessible(t *testing.T) {
	old := &countingBackend{Backend: mem.New(64, 512)}
	nb := &countingBackend{Backend: mem.New(64, 512)}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: old})
	if err := s.sub.SetANAState(testPortID, DefaultANAGroup, nvme.ANAStateInaccessible); err != nil {
		t.Fatal(err)
	}
	var fl nvme.SQE
	fl.SetFlush(1)
	s.io.expect(fl, nil, nvme.StatusANAInaccessible)
	if err := s.sub.ReplaceNamespaceBackend(1, nb); err != nil {
		t.Fatal(err)
	}
	s.io.expect(fl, nil, nvme.StatusANAInaccessible)
	s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), nvme.StatusANAInaccessible)
	if err := s.sub.SetANAState(testPortID, DefaultANAGroup, nvme.ANAStateOptimized); err != nil {
		t.Fatal(err)
	}
	s.io.expect(fl, nil, nvme.StatusSuccess)
	if o, n := old.flushes.Load(), nb.flushes.Load(); o != 0 || n != 1 {
		t.Fatalf("flushes: old backend %d, new %d; want 0 and 1", o, n)
	}
}

// TestReplacedNamespaceBroadcastFlush: a broadcast Flush that loaded the
// namespace table before a swap answers a path error (the host retries
// it where it reaches the backends serving now), never success without
// flushing; a controller shutdown's flush follows the swap.
func TestReplacedNamespaceBroadcastFlush(t *testing.T) {
	old := &countingBackend{Backend: mem.New(64, 512)}
	nb := &countingBackend{Backend: mem.New(64, 512)}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: old})
	tbl := s.sub.ns.Load() // as a Flush parsed before the swap holds it
	if err := s.sub.ReplaceNamespaceBackend(1, nb); err != nil {
		t.Fatal(err)
	}
	err := flushAll(tbl, false)
	if !errors.Is(err, errReplacedDuringFlush) {
		t.Fatalf("broadcast flush across a swap: %v", err)
	}
	if st := backendStatus(err, false); st != nvme.StatusANAInaccessible {
		t.Fatalf("status %v, want a path error without DNR", st)
	}
	if err := flushAll(tbl, true); err != nil {
		t.Fatal(err)
	}
	if o, n := old.flushes.Load(), nb.flushes.Load(); o != 0 || n != 1 {
		t.Fatalf("shutdown flush: old backend %d, new %d; want 0 and 1", o, n)
	}
	// Through the wire: a broadcast flush now flushes the new backend.
	var fl nvme.SQE
	fl.SetFlush(nsidBroadcast)
	s.io.expect(fl, nil, nvme.StatusSuccess)
	if n := nb.flushes.Load(); n != 2 {
		t.Fatalf("new backend flushed %d times, want 2", n)
	}
}

// closable fails the test's I/O once closed: a command that reaches a
// backend after its owner closed it is counted.
type closable struct {
	blockdev.Backend
	closed *atomic.Bool
	late   *atomic.Int64
}

func (c closable) check() error {
	if c.closed.Load() {
		c.late.Add(1)
		return fmt.Errorf("%w: backend used after close", blockdev.ErrClosed)
	}
	return nil
}

func (c closable) ReadAt(b [][]byte, lba uint64) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.Backend.ReadAt(b, lba)
}

func (c closable) WriteAt(b [][]byte, lba uint64, f blockdev.WriteFlags) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.Backend.WriteAt(b, lba, f)
}

func (c closable) Flush() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.Backend.Flush()
}

// TestReplaceNamespaceBackendUnderIO (run with -race): queues write and
// read back their own blocks while the backend is swapped back and forth
// many times, each old backend "closed" as soon as the swap returned.
// Every command succeeds with the right data, and none reaches a closed
// backend: in-flight commands drain first, and a command that loaded the
// table before a swap runs on the backend in its place.
func TestReplaceNamespaceBackendUnderIO(t *testing.T) {
	store := mem.New(256, 512)
	var late, ops atomic.Int64
	cur := closable{Backend: store, closed: new(atomic.Bool), late: &late}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: cur})
	const queues, swaps = 3, 200
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, queues)
	for qi := range queues {
		h := s.io
		if qi > 0 {
			h = newHost(t, s.tg, testDepth)
			if r := h.connect(uint16(qi+1), testDepth-1, 0, testSubNQN, testHostNQN, s.cntlid); !r.Status().OK() {
				t.Fatalf("I/O connect %d: %v", qi+1, r.Status())
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- hammer(h, uint64(qi), stop, &ops)
		}()
	}
	// Each swap waits for a write+read pair after the previous one, so
	// every swap lands while the queues are at work (a loop of swaps alone
	// could end before a hammer goroutine was first scheduled — on a busy
	// host it did, and the test then checked nothing).
	seen := int64(0)
	for i := range swaps {
		deadline := time.Now().Add(30 * time.Second)
		for ops.Load() <= seen {
			if len(errs) > 0 { // a hammer stopped: it failed (stop is not closed yet)
				t.Fatalf("swap %d: %v", i, <-errs)
			}
			if time.Now().After(deadline) {
				t.Fatalf("swap %d: no write+read pair completed for 30 s", i)
			}
			runtime.Gosched()
		}
		seen = ops.Load()
		next := closable{Backend: store, closed: new(atomic.Bool), late: &late}
		if err := s.sub.ReplaceNamespaceBackend(1, next); err != nil {
			t.Fatalf("swap %d: %v", i, err)
		}
		cur.closed.Store(true) // the owner closes the old backend now
		cur = next
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if n := late.Load(); n != 0 {
		t.Fatalf("%d commands reached a backend after the swap had returned", n)
	}
	t.Logf("%d write+read pairs during %d swaps", ops.Load(), swaps)
	if ops.Load() < swaps {
		t.Fatalf("%d write+read pairs during %d swaps, want one between each two", ops.Load(), swaps)
	}
}

// hammer writes block lba with a new pattern and reads it back until
// stop; it returns the first failure. It runs on its own goroutine
// (the queue's), so it reports errors instead of failing the test.
func hammer(h *host, lba uint64, stop <-chan struct{}, ops *atomic.Int64) error {
	w, rd := make([]byte, 512), make([]byte, 512)
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		for j := range w {
			w[j] = byte(i + j + int(lba))
		}
		if st := hammerDo(h, rw(nvme.IOWrite, 1, lba, 1, 0), w); st != nvme.StatusSuccess {
			return fmt.Errorf("block %d: write %d: %v", lba, i, st)
		}
		if st := hammerDo(h, rw(nvme.IORead, 1, lba, 1, 0), rd); st != nvme.StatusSuccess {
			return fmt.Errorf("block %d: read %d: %v", lba, i, st)
		}
		ops.Add(1)
		if !bytes.Equal(w, rd) {
			return fmt.Errorf("block %d: read %d returned other data", lba, i)
		}
	}
}

// hammerDo runs sqe and returns its status, sending it again after a
// path error without DNR, as a host does (a command that kept losing to
// swaps, maxReplaced).
func hammerDo(h *host, sqe nvme.SQE, data []byte) nvme.Status {
	for {
		r, done := h.submit(sqe, data)
		if !done {
			select {
			case got := <-h.conn.completed:
				if got != r {
					return nvme.StatusInternalError
				}
			case <-time.After(safety):
				return nvme.StatusInternalError
			}
		}
		if st := r.Status(); st != statusRefused {
			return st
		}
	}
}

// fixedMem is a mem backend with the asynchronous and fixed-buffer
// paths, counting registrations and fixed I/O.
type fixedMem struct {
	*mem.Backend
	regs, unregs, fixedIOs atomic.Int32
}

func (*fixedMem) NonBlocking() bool { return false } // take the asynchronous path

func (f *fixedMem) SubmitRead(buf []byte, lba uint64, c blockdev.Completion) bool {
	go func() { c.IODone(f.ReadAt([][]byte{buf}, lba)) }()
	return true
}

func (f *fixedMem) SubmitWrite(buf []byte, lba uint64, fl blockdev.WriteFlags, c blockdev.Completion) bool {
	go func() { c.IODone(f.WriteAt([][]byte{buf}, lba, fl)) }()
	return true
}

func (f *fixedMem) RegisterFixed([]byte) (blockdev.FixedRegion, error) {
	return blockdev.FixedRegion(f.regs.Add(1)), nil
}

func (f *fixedMem) UnregisterFixed(blockdev.FixedRegion) { f.unregs.Add(1) }

func (f *fixedMem) SubmitReadFixed(buf []byte, lba uint64, reg blockdev.FixedRegion, c blockdev.Completion) bool {
	if reg != 0 { // 0: the core has no registration, a plain op
		f.fixedIOs.Add(1)
	}
	return f.SubmitRead(buf, lba, c)
}

func (f *fixedMem) SubmitWriteFixed(buf []byte, lba uint64, fl blockdev.WriteFlags, reg blockdev.FixedRegion, c blockdev.Completion) bool {
	if reg != 0 {
		f.fixedIOs.Add(1)
	}
	return f.SubmitWrite(buf, lba, fl, c)
}

// TestReplacedBackendsFixedBuffers: a queue that stays connected across
// many backend swaps (failovers back and forth) keeps using fixed
// buffers on each new backend: registrations with backends no namespace
// runs on any more are dropped when the queue's table is full.
func TestReplacedBackendsFixedBuffers(t *testing.T) {
	cur := &fixedMem{Backend: mem.New(64, 512)}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: cur})
	region := make([]byte, 4096)
	s.io.q.SetDataRegion(region)
	all := []*fixedMem{cur}
	for i := range 3 * maxFixed {
		s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), region[:512], nvme.StatusSuccess)
		if n := cur.fixedIOs.Load(); n != 1 {
			t.Fatalf("swap %d: %d fixed-buffer I/Os on the serving backend, want 1", i, n)
		}
		next := &fixedMem{Backend: mem.New(64, 512)}
		if err := s.sub.ReplaceNamespaceBackend(1, next); err != nil {
			t.Fatal(err)
		}
		cur = next
		all = append(all, next)
	}
	live := 0
	for _, b := range all {
		live += int(b.regs.Load() - b.unregs.Load())
	}
	if live > maxFixed {
		t.Fatalf("%d registrations alive, at most %d wanted", live, maxFixed)
	}
}
