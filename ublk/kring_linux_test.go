package ublk

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/uring"
	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// TestKringWake runs the queue ring's wake-up on a real io_uring (no ublk
// needed): a sleeping submit(true) returns when another goroutine calls
// wake, the eventfd read never shows up in reap, and ordinary entries do.
func TestKringWake(t *testing.T) {
	k := testKring(t)
	out := make([]uring.CQE, 8)
	for round := range 3 {
		go k.wake() // before or after the read is armed: either way it ends the sleep
		for {
			if err := k.submit(true); err != nil {
				t.Fatal(err)
			}
			if n := k.reap(out); n != 0 {
				t.Fatalf("round %d: reap returned %d entries for a wake-up", round, n)
			}
			if !k.armed { // the eventfd read completed and was consumed
				break
			}
		}
	}
	e := k.next()
	e.Opcode, e.UserData = uring.OpNop, 7
	if err := k.submit(true); err != nil {
		t.Fatal(err)
	}
	for n := 0; n == 0; n = k.reap(out) {
		if err := k.submit(true); err != nil {
			t.Fatal(err)
		}
	}
	if out[0].UserData != 7 {
		t.Fatalf("reaped %+v", out[0])
	}
}

// TestKringIdleSleep: after nbsys.IdleThreshold sleeps that held the P
// and ended with nothing (each at most parkTimeout), the next sleep gives
// the P up and lasts until a wake-up; a completion in between starts the
// count over.
func TestKringIdleSleep(t *testing.T) {
	k := testKring(t)
	out := make([]uring.CQE, 8)
	sleep := func() int {
		t.Helper()
		if err := k.submit(true); err != nil {
			t.Fatal(err)
		}
		return k.reap(out)
	}
	// Whether the next sleep would give the P up (asked of a copy).
	idleNext := func() bool { c := k.idle; return c.Idle() }
	// A wake-up's completion is not an empty sleep.
	for range nbsys.IdleThreshold - 1 {
		sleep()
	}
	k.wake()
	for k.armed {
		sleep() // the eventfd read completes (a stray signal may end a sleep first)
	}
	if idleNext() || k.deepWaits != 0 {
		t.Fatalf("after a wake-up: idle %v, deep sleeps %d", idleNext(), k.deepWaits)
	}
	// The wake-up started the count over: it takes IdleThreshold empty
	// sleeps, not fewer, to be idle again.
	for i := 0; !idleNext(); i++ {
		if i == nbsys.IdleThreshold {
			t.Fatalf("not idle after %d empty sleeps", i)
		}
		if n := sleep(); n != 0 {
			t.Fatalf("an idle sleep reaped %d entries", n)
		}
		if i < nbsys.IdleThreshold-1 && idleNext() {
			t.Fatalf("idle after %d empty sleeps: the wake-up did not start the count over", i+1)
		}
	}
	if k.deepWaits != 0 {
		t.Fatalf("%d deep sleeps before the queue was idle", k.deepWaits)
	}
	go k.wake() // before or after the sleep begins: either way it ends it
	sleep()
	if k.deepWaits != 1 || idleNext() {
		t.Fatalf("idle sleep: deep sleeps %d, idle again %v; want 1, false", k.deepWaits, idleNext())
	}
	for k.armed {
		sleep()
	}
	if k.deepWaits != 1 {
		t.Fatalf("deep sleeps %d after the wake-up, want 1", k.deepWaits)
	}
}

// testKring is a queue ring on a real io_uring (no ublk needed), closed
// with the test; the test is skipped without io_uring.
func testKring(t *testing.T) *kring {
	t.Helper()
	k, err := newKring(4)
	if errors.Is(err, uring.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		k.closeRing()
		k.closeWaker()
	})
	return k
}
