package nbsys

import (
	"runtime"
	"testing"
)

// TestReserveP: every goroutine that sleeps keeping its P gets one and one
// more stays idle (GOMAXPROCS only grows: a larger setting stays).
func TestReserveP(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	sleepersMu.Lock()
	before, beforeBase := sleepers, baseProcs
	sleepers, baseProcs = 0, 0
	sleepersMu.Unlock()
	defer func() {
		sleepersMu.Lock()
		sleepers, baseProcs = before, beforeBase
		sleepersMu.Unlock()
	}()
	ReserveP(2)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("one device of 2 queues: GOMAXPROCS %d, want 3", got)
	}
	if got := Procs(); got != 1 {
		t.Fatalf("Procs %d after a reservation, want the 1 the process was given", got)
	}
	ReserveP(1) // a second device in the same process
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("two devices, 3 queues: GOMAXPROCS %d, want 4", got)
	}
	ReleaseP(3) // both devices gone
	ReserveP(1)
	if got := runtime.GOMAXPROCS(0); got != 4 {
		t.Fatalf("GOMAXPROCS %d after release, want 4 (never lowered)", got)
	}
	ReleaseP(1)
	runtime.GOMAXPROCS(1)
	ReserveP(2)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("released, then 2 sleepers: GOMAXPROCS %d, want 3", got)
	}
	runtime.GOMAXPROCS(16)
	ReserveP(1)
	if got := runtime.GOMAXPROCS(0); got != 16 {
		t.Fatalf("GOMAXPROCS lowered to %d", got)
	}
}
