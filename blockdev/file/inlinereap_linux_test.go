package file

import (
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// TestUnplugReapsPostedCompletionsInline: completions that are already
// posted when Unplug's io_uring_enter returns (a NOP, like a read from a
// RAM-backed device, completes during the call) are finished by Unplug on
// the caller's goroutine, each exactly once, and leave no count on the
// eventfd (paused around the submission where the kernel can, read back
// where not), so the reaper is not woken for nothing; the pause ends with
// every Unplug. GOMAXPROCS 1 keeps the reaper from running
// between the submission and Unplug's own reap, so nearly every round is
// inline; the test asserts only that some are (and that none is lost or
// doubled), so it does not depend on scheduling.
func TestUnplugReapsPostedCompletionsInline(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	b, a := eventFDRing(t)
	pausable := a.ring.PauseEventFD()
	a.ring.ResumeEventFD()
	clears0 := a.clears.Load()
	const rounds = 100
	c := countDone{n: new(atomic.Int64)}
	for range rounds {
		plugNop(t, b, c)
		before := a.inline.Load()
		b.Unplug()
		if a.ring.EventFDPaused() {
			t.Fatal("Unplug left the eventfd paused: later completions would raise no signal")
		}
		// A round reaped inline also consumed the eventfd's count, so the
		// reaper is not woken for it (nothing else is in flight to signal).
		if a.inline.Load() > before && eventFDReadable(t, a) {
			t.Fatal("the eventfd still signals completions Unplug reaped inline: the reaper will wake for nothing")
		}
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
	// Where the kernel can pause the eventfd (5.8+), Unplug does so and
	// needs no read to take the count back.
	if clears := a.clears.Load() - clears0; pausable && clears != 0 {
		t.Fatalf("%d eventfd reads to clear counts, want none: the submission's completions were signalled", clears)
	}
	t.Logf("%d of %d completions finished inline (eventfd paused: %v)", inline, rounds, pausable)
}

// TestUnplugPausedWakesBusyReaper: when Unplug paused the eventfd but the
// reaper holds reapMu (it is draining, and its last look at the CQ may
// come before this submission's completion is posted — unsignalled), Unplug
// must send the reaper round once more; otherwise that completion would
// wait in the CQ for a signal that never comes. The test holds reapMu
// itself for the reaper's turn.
func TestUnplugPausedWakesBusyReaper(t *testing.T) {
	b, a := eventFDRing(t)
	if !a.ring.PauseEventFD() {
		t.Skip("the kernel cannot pause the eventfd (before 5.8)")
	}
	a.ring.ResumeEventFD()
	c := countDone{n: new(atomic.Int64)}
	a.reapMu.Lock() // the reaper is busy: Unplug cannot reap inline
	plugNop(t, b, c)
	b.Unplug()
	// The NOP completed during the submission, while the eventfd was
	// paused; the reaper (blocked on reapMu once woken) must still take it.
	a.reapMu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for c.n.Load() == 0 {
		if time.Now().After(deadline) {
			a.reapMu.Lock() // take it here, so that Close does not wait for it
			a.drainLocked()
			a.reapMu.Unlock()
			t.Fatal("the completion posted while the eventfd was paused was never reaped")
		}
		runtime.Gosched()
	}
	if got := c.n.Load(); got != 1 {
		t.Fatalf("%d completions delivered, want 1", got)
	}
	if a.pokes.Load() != 1 {
		t.Fatalf("%d eventfd writes, want 1", a.pokes.Load())
	}
}

// eventFDRing opens a backend on a private one-ring group whose reaper
// waits on an eventfd (skipping where io_uring or its eventfd is
// unavailable).
func eventFDRing(t *testing.T) (*Backend, *sharedRing) {
	t.Helper()
	g := privateGroup(t, GroupOptions{Rings: 1, Entries: 64})
	b := mustOpen(t, filepath.Join(t.TempDir(), "v"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	if b.ring == nil {
		t.Skip("no io_uring fast path here")
	}
	if b.ring.evrc == nil {
		t.Skip("no io_uring eventfd here: the reaper waits in io_uring_enter and nothing is reaped inline")
	}
	return b, b.ring
}

// plugNop plugs b and queues one NOP for it in its ring's SQ, as an I/O
// completing to c (no buffer: a 0-byte result is complete); b's Unplug
// submits it.
func plugNop(t *testing.T, b *Backend, c countDone) {
	t.Helper()
	a := b.ring
	b.Plug()
	if !b.mu.TryRLock() {
		t.Fatal("backend closing")
	}
	// With one P the reaper can be preempted while it holds reapMu:
	// Unplug then leaves the reaping to it, and it needs the P back.
	deadline := time.Now().Add(30 * time.Second)
	for a.mu.Lock(); len(a.free) == 0; a.mu.Lock() {
		a.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("no free slot for 30 s: earlier completions were not reaped")
		}
		runtime.Gosched()
	}
	defer a.mu.Unlock()
	i := a.free[len(a.free)-1]
	a.free = a.free[:len(a.free)-1]
	a.slots[i] = asyncSlot{b: b, c: c}
	b.inflight++
	if err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: uint64(i)}); err != nil {
		t.Fatal(err)
	}
}

// eventFDReadable reports whether a's eventfd holds a count, consuming it.
func eventFDReadable(t *testing.T, a *sharedRing) bool {
	t.Helper()
	var readable bool
	err := a.evrc.Control(func(fd uintptr) {
		var b [8]byte
		n, err := unix.Read(int(fd), b[:])
		readable = err == nil && n == 8
	})
	if err != nil {
		t.Fatal(err)
	}
	return readable
}

// TestInlineReapOfStopWakesReaper: an inline reap that takes the stop NOP
// (posted while the eventfd was paused, so unsignalled) must wake the
// reaper, asleep on the eventfd, so that it sees sawStop and exits;
// otherwise stop would wait for it forever.
func TestInlineReapOfStopWakesReaper(t *testing.T) {
	_, a := eventFDRing(t)
	a.mu.Lock()
	paused := a.ring.PauseEventFD()
	if err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: stopTag}); err != nil {
		a.mu.Unlock()
		t.Fatal(err)
	}
	_, err := a.ring.Submit()
	a.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	a.reapInline(paused)
	select {
	case <-a.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the reaper did not exit after the stop NOP was reaped inline")
	}
}
