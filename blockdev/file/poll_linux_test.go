package file

import (
	"path/filepath"
	"sync/atomic"
	"testing"
)

// TestPollFinishesPostedCompletions: completions the ring holds that
// nobody took yet (here: Unplug could not reap inline because the reaper
// held reapMu) are finished by Poll on the caller's goroutine, each
// exactly once whoever takes it; a Poll that took some also took their
// count back from the eventfd, so the reaper is not woken for them. After
// the backend's ring is gone, Poll finds nothing instead of reading freed
// memory.
func TestPollFinishesPostedCompletions(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1, Entries: 64})
	b := mustOpen(t, filepath.Join(t.TempDir(), "v"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	a := b.ring
	if a == nil || a.evrc == nil {
		t.Skip("no io_uring eventfd here: the reaper waits in io_uring_enter and nothing is reaped inline")
	}
	const rounds = 50
	c := countDone{n: new(atomic.Int64)}
	polled := 0
	for range rounds {
		a.reapMu.Lock() // the reaper is busy: Unplug leaves the NOP posted
		plugNop(t, b, c)
		b.Unplug()
		a.reapMu.Unlock()
		// The reaper, woken by Unplug's signal, may take it first.
		if n := b.Poll(); n > 0 {
			polled += n
			if eventFDReadable(t, a) {
				t.Fatal("the eventfd still signals completions Poll finished: the reaper will wake for nothing")
			}
		}
	}
	a.reapMu.Lock()
	a.drainLocked()
	got := c.n.Load()
	a.reapMu.Unlock()
	if got != rounds {
		t.Fatalf("%d completions delivered, want %d (lost or doubled)", got, rounds)
	}
	if polled == 0 {
		t.Fatal("Poll finished none of the posted completions")
	}
	t.Logf("%d of %d completions finished by Poll", polled, rounds)

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil { // unmaps the ring: its last backend left
		t.Fatal(err)
	}
	if n := b.Poll(); n != 0 {
		t.Fatalf("Poll after the ring was unmapped finished %d", n)
	}
}
