package rdma

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// TestEpollWaiterSleep: a group asleep in its raw waits is woken by a
// ring, also after a stop-the-world in between (that the raw wait yields
// to one at once is nbsys.TestEpollWait's), and falls back after rawWaits
// of them to the blocking wait, from which a ring wakes it as well.
func TestEpollWaiterSleep(t *testing.T) {
	w, err := newEpollWaiter()
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	done := make(chan error, 1)
	sleep := func() {
		w.disarm()
		go func() { done <- w.sleep() }()
		for !w.asleep.Load() {
			runtime.Gosched()
		}
	}

	sleep()
	runtime.GC()
	w.ring()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	blocking := w.blockingWaits.Load()
	sleep()
	deadline := time.Now().Add(time.Minute)
	for w.blockingWaits.Load() == blocking { // rawWaits × rawWait, then the blocking wait
		if time.Now().After(deadline) {
			t.Fatal("an idle group never left its raw waits")
		}
		runtime.Gosched()
	}
	w.ring()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestEpollGroupsDoNotGrowGOMAXPROCS: epoll groups reserve a P each, and
// the default group count is taken from GOMAXPROCS as it was before any
// reservation, so listener after listener gets the same number of groups
// and GOMAXPROCS settles (counting the raised value instead, each new
// listener had one group more than the last: 1, 2, 3 … on one CPU).
func TestEpollGroupsDoNotGrowGOMAXPROCS(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	want := nbsys.Procs()
	for i := range 3 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { // the rig is closed when it ends
			g := newRig(t, rigOpts{cfg: Config{PollWait: PollWaitEpoll}})
			if n := len(g.l.groups); n != want {
				t.Fatalf("listener %d: %d poll groups, want %d", i, n, want)
			}
			if got, max := runtime.GOMAXPROCS(0), max(procs, want+1); got > max {
				t.Fatalf("listener %d: GOMAXPROCS %d, want at most %d", i, got, max)
			}
		})
	}
}
