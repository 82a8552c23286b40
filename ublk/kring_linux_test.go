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
