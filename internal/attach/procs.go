package attach

import (
	"runtime"
	"sync"
)

// pollers counts the threads this process has started that sleep in a
// system call of their own — ublk queue threads, nbd connection loops —
// of every attachment, never decremented (a P left over is harmless).
// pollersMu guards it and the GOMAXPROCS check and set (two
// attachments starting at once must not lower it).
var (
	pollersMu sync.Mutex
	pollers   int
)

// pollerProcs raises GOMAXPROCS to one P per such thread of the process
// plus one. A ublk queue thread sleeps in io_uring_enter, an nbd loop in
// poll(2), as a blocking system call; when no P is left idle, the
// runtime's monitor takes the sleeping thread's P after ~20 µs and starts
// a spinning thread to look for work (runtime handoffp: no idle P, no spinning M), which
// finds none and sleeps again, and the queue thread then waits for a P
// when it wakes: thread wake-ups per sleep for nothing (on a one-vCPU
// guest, runtime.schedule/findRunnable/futex were ~20 % of the
// attachment's CPU). With a P idle the monitor leaves a system call
// shorter than 10 ms alone (runtime retake) and the thread goes on with
// its own P. GOMAXPROCS is only raised; the CPUs the process may run on
// are unchanged, so this adds no parallelism, only Ps that stay idle.
func pollerProcs(threads int) {
	pollersMu.Lock()
	defer pollersMu.Unlock()
	pollers += threads
	if want := pollers + 1; runtime.GOMAXPROCS(0) < want {
		runtime.GOMAXPROCS(want)
	}
}
