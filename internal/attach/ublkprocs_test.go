package attach

import (
	"runtime"
	"testing"
)

// TestUblkProcs: every ublk queue thread of the process gets a P and one
// more stays idle (GOMAXPROCS only grows: a larger setting stays).
func TestUblkProcs(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	ublkProcsMu.Lock()
	before := ublkQueues
	ublkQueues = 0
	ublkProcsMu.Unlock()
	defer func() {
		ublkProcsMu.Lock()
		ublkQueues = before
		ublkProcsMu.Unlock()
	}()
	ublkProcs(2)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("one device of 2 queues: GOMAXPROCS %d, want 3", got)
	}
	ublkProcs(1) // a second device in the same process
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("two devices, 3 queues: GOMAXPROCS %d, want 4", got)
	}
	runtime.GOMAXPROCS(16)
	ublkProcs(1)
	if got := runtime.GOMAXPROCS(0); got != 16 {
		t.Fatalf("GOMAXPROCS lowered to %d", got)
	}
}
