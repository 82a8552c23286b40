package rdma

import (
	"runtime"
	"testing"
	"time"
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
