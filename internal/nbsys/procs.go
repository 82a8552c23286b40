package nbsys

import (
	"runtime"
	"sync"
)

// sleepers counts the goroutines of this process that sleep in a raw
// call keeping their P (Poll, EpollWait loops: ublk queue threads, nbd
// connection loops, RDMA poll groups) and have not ended (ReleaseP). sleepersMu guards it and the GOMAXPROCS check and
// set (two callers at once must not lower it).
var (
	sleepersMu sync.Mutex
	sleepers   int
	// baseProcs is GOMAXPROCS as ReserveP first found it (0: never
	// called): the processors the process was given, before any P kept
	// for a sleeper.
	baseProcs int
)

// Procs is the number of processors to size per-CPU work by (poll
// groups, rings): GOMAXPROCS as it was before ReserveP first raised it,
// or GOMAXPROCS now when nothing was reserved. Counting the raised value
// instead would feed back — each new set of poll groups reserving a P per
// group, and the next set being sized by the result.
func Procs() int {
	sleepersMu.Lock()
	defer sleepersMu.Unlock()
	if baseProcs > 0 {
		return baseProcs
	}
	return runtime.GOMAXPROCS(0)
}

// ReserveP records n more goroutines that sleep keeping their P and
// raises GOMAXPROCS to one P for each such goroutine of the process plus
// one, so that everything else — and the runtime's monitor — still finds
// an idle P while they all sleep: the monitor then leaves any other
// thread's system call shorter than 10 ms alone (runtime retake) instead
// of taking its P, handing it to a thread that finds no work, and
// resetting itself to polling every 20 µs. GOMAXPROCS is only raised;
// the CPUs the process may run on are unchanged, so this adds no
// parallelism, only Ps that stay idle.
func ReserveP(n int) {
	sleepersMu.Lock()
	defer sleepersMu.Unlock()
	if baseProcs == 0 {
		baseProcs = runtime.GOMAXPROCS(0)
	}
	sleepers += n
	if want := sleepers + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}

// ReleaseP records that n such goroutines ended. GOMAXPROCS is left as it
// is (an idle P is harmless); the next ReserveP counts from the goroutines
// still there, so a process that starts and ends them repeatedly does not
// grow it.
func ReleaseP(n int) {
	sleepersMu.Lock()
	defer sleepersMu.Unlock()
	sleepers = max(sleepers-n, 0)
}
