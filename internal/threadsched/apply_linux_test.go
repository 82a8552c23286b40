package threadsched

import (
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// policies returns the scheduling policy of every thread of the process.
func policies(t *testing.T) map[int]uint32 {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]uint32{}
	for _, e := range tasks {
		tid, _ := strconv.Atoi(e.Name())
		if a, err := unix.SchedGetAttr(tid, 0); err == nil {
			out[tid] = a.Policy
		}
	}
	return out
}

// TestApplyBatch: every thread is SCHED_BATCH after Apply, and a thread
// the runtime starts afterwards is too (it inherits it).
func TestApplyBatch(t *testing.T) {
	if err := Apply(Normal); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p == unix.SCHED_BATCH {
			t.Skipf("thread %d is SCHED_BATCH already: the test was started under it", tid)
		}
	}
	if err := Apply(Batch); err != nil {
		t.Fatal(err)
	}
	for tid, p := range policies(t) {
		if p != unix.SCHED_BATCH {
			t.Errorf("thread %d: policy %d after Apply(batch)", tid, p)
		}
	}
	// Threads the runtime makes from now on: goroutines that hold their
	// threads while others are started force new ones.
	before := policies(t)
	release := make(chan struct{})
	started := make(chan int)
	const n = 8
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- unix.Gettid()
			<-release
		}()
	}
	fresh := 0
	for range n {
		tid := <-started
		if _, ok := before[tid]; !ok {
			fresh++
		}
		a, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy != unix.SCHED_BATCH {
			t.Errorf("thread %d started after Apply: policy %d", tid, a.Policy)
		}
	}
	close(release)
	if fresh == 0 {
		t.Fatalf("%d locked goroutines all ran on the %d threads there were: no new thread was checked", n, len(before))
	}
}

func TestCheck(t *testing.T) {
	for _, p := range []string{Batch, Normal} {
		if err := Check(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if err := Check("fifo"); err == nil {
		t.Error("fifo accepted")
	}
}
