package attach

import (
	"runtime"
	"testing"
)

// TestPollerProcs: every ublk queue thread (or nbd loop) of the process gets a P and one
// more stays idle (GOMAXPROCS only grows: a larger setting stays).
func TestPollerProcs(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	pollersMu.Lock()
	before := pollers
	pollers = 0
	pollersMu.Unlock()
	defer func() {
		pollersMu.Lock()
		pollers = before
		pollersMu.Unlock()
	}()
	pollerProcs(2)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("one device of 2 queues: GOMAXPROCS %d, want 3", got)
	}
	pollerProcs(1) // a second device in the same process
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("two devices, 3 queues: GOMAXPROCS %d, want 4", got)
	}
	runtime.GOMAXPROCS(16)
	pollerProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 16 {
		t.Fatalf("GOMAXPROCS lowered to %d", got)
	}
}
