package file

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// TestUnplugReapsPostedCompletionsInline: completions that are already
// posted when Unplug's io_uring_enter returns (a NOP, like a read from a
// RAM-backed device, completes during the call) are finished by Unplug on
// the caller's goroutine, each exactly once; the reaper, woken through the
// eventfd, finds nothing left. GOMAXPROCS 1 keeps the reaper from running
// between the submission and Unplug's own reap, so nearly every round is
// inline; the test asserts only that some are (and that none is lost or
// doubled), so it does not depend on scheduling.
func TestUnplugReapsPostedCompletionsInline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	g := privateGroup(t, GroupOptions{Rings: 1, Entries: 64})
	b := mustOpen(t, filepath.Join(t.TempDir(), "v"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	a := b.ring
	if a == nil {
		t.Skip("no io_uring fast path here")
	}
	if a.evrc == nil {
		t.Skip("no io_uring eventfd here: the reaper waits in io_uring_enter and nothing is reaped inline")
	}
	const rounds = 100
	c := countDone{n: new(atomic.Int64)}
	for range rounds {
		b.Plug()
		if !b.mu.TryRLock() {
			t.Fatal("backend closing")
		}
		a.mu.Lock()
		if len(a.free) == 0 {
			a.mu.Unlock()
			b.mu.RUnlock()
			b.Unplug()
			t.Fatal("no free slot: earlier completions were not reaped")
		}
		i := a.free[len(a.free)-1]
		a.free = a.free[:len(a.free)-1]
		a.slots[i] = asyncSlot{b: b, c: c} // no buffer: a 0-byte result is complete
		b.inflight++
		if err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: uint64(i)}); err != nil {
			t.Fatal(err)
		}
		a.mu.Unlock()
		b.Unplug()
	}
	// Whatever the reaper took, it took under reapMu: once it is free,
	// every completion was delivered.
	a.reapMu.Lock()
	a.drainLocked()
	got, inline := c.n.Load(), a.inline.Load()
	a.reapMu.Unlock()
	if got != rounds {
		t.Fatalf("%d completions delivered, want %d (lost or doubled)", got, rounds)
	}
	if inline == 0 {
		t.Fatal("no completion was finished inline by Unplug")
	}
	t.Logf("%d of %d completions finished inline", inline, rounds)
}

// nopSlot queues a NOP for b on its ring as an I/O whose completion goes
// to c (a.mu held by the caller).
func nopSlot(t *testing.T, b *Backend, c blockdev.Completion) {
	t.Helper()
	a := b.ring
	if !b.mu.TryRLock() {
		t.Fatal("backend closing")
	}
	if len(a.free) == 0 {
		panic("no free slot: earlier completions were not reaped")
	}
	i := a.free[len(a.free)-1]
	a.free = a.free[:len(a.free)-1]
	a.slots[i] = asyncSlot{b: b, c: c}
	b.inflight++
	if err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: uint64(i)}); err != nil {
		t.Fatal(err)
	}
}

// signalDone sends on a channel per completion.
type signalDone chan struct{}

func (c signalDone) IODone(error) { c <- struct{}{} }

// TestInlineCompletionsNotLost: with the eventfd signalled for
// asynchronous completions only, a completion posted during the
// submitting io_uring_enter (a NOP always is) must still be delivered,
// whoever submitted it: an unplugged submission (the reaper must be
// woken), and plugged ones racing each other and the reaper for reapMu.
// Without the kick or the re-check after reapMu a completion waits
// forever; the deadline only turns that hang into a failure.
func TestInlineCompletionsNotLost(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1, Entries: 64})
	b := mustOpen(t, filepath.Join(t.TempDir(), "v"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	a := b.ring
	if a == nil || a.evrc == nil {
		t.Skip("no io_uring eventfd here")
	}
	if !a.evAsync {
		t.Log("kernel without IORING_REGISTER_EVENTFD_ASYNC: every completion signals")
	}
	const each, workers = 200, 3
	var wg sync.WaitGroup
	errs := make(chan string, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One NOP in flight per worker: the ring never runs out of
			// slots, and a lost completion stops its worker.
			done := make(signalDone, 1)
			deadline := time.After(time.Minute)
			for k := range each {
				if w == 0 {
					// Unplugged: submitted at once.
					a.mu.Lock()
					nopSlot(t, b, done)
					_, _ = a.submitLocked()
					a.mu.Unlock()
				} else {
					b.Plug()
					a.mu.Lock()
					nopSlot(t, b, done)
					a.mu.Unlock()
					b.Unplug()
				}
				select {
				case <-done:
				case <-deadline:
					errs <- fmt.Sprintf("worker %d: completion %d of %d not delivered after a minute: left in the CQ", w, k+1, each)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
