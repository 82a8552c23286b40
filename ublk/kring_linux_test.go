package ublk

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// TestKringWake runs the queue ring's wake-up on a real io_uring (no ublk
// needed): a sleeping submit(true) returns when another goroutine calls
// wake, the eventfd read never shows up in reap, and ordinary entries do.
func TestKringWake(t *testing.T) {
	k, err := newKring(4)
	if errors.Is(err, uring.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer k.closeWaker()
	defer k.closeRing()
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

// TestKringIdleSleep: after idleWaits sleeps that held the P and ended
// with nothing (each at most parkTimeout), the next sleep gives the P up
// and lasts until a wake-up; a completion in between starts the count
// over.
func TestKringIdleSleep(t *testing.T) {
	k, err := newKring(4)
	if errors.Is(err, uring.ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer k.closeWaker()
	defer k.closeRing()
	out := make([]uring.CQE, 8)
	sleep := func() int {
		t.Helper()
		if err := k.submit(true); err != nil {
			t.Fatal(err)
		}
		return k.reap(out)
	}
	// A wake-up's completion is not an empty sleep.
	sleep() // nothing happens: empty 1
	k.wake()
	for k.armed {
		sleep() // the eventfd read completes (a stray signal may end a sleep first)
	}
	if k.empty != 0 || k.deepWaits != 0 {
		t.Fatalf("after a wake-up: empty %d, deep sleeps %d", k.empty, k.deepWaits)
	}
	for k.empty < idleWaits {
		if n := sleep(); n != 0 {
			t.Fatalf("an idle sleep reaped %d entries", n)
		}
	}
	if k.deepWaits != 0 {
		t.Fatalf("%d deep sleeps before the queue was idle", k.deepWaits)
	}
	go k.wake() // before or after the sleep begins: either way it ends it
	sleep()
	if k.deepWaits != 1 || k.empty != 0 {
		t.Fatalf("idle sleep: deep sleeps %d, empty %d; want 1, 0", k.deepWaits, k.empty)
	}
	for k.armed {
		sleep()
	}
	if k.deepWaits != 1 {
		t.Fatalf("deep sleeps %d after the wake-up, want 1", k.deepWaits)
	}
}
