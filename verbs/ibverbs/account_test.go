//go:build ibverbs

package ibverbs

import (
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
)

// TestWQRing: the work-queue accounting ring across wrap-around. A send
// completion retires every entry up to the one it names (unsignaled WRs
// before it), a receive completion its own; an unknown ID retires
// nothing; free space comes back exactly.
func TestWQRing(t *testing.T) {
	r := newRing(5)
	send := func(ids ...uint64) {
		t.Helper()
		wrs := make([]verbs.SendWR, len(ids))
		for i, id := range ids {
			wrs[i] = verbs.SendWR{ID: id}
		}
		if len(ids) > r.free() {
			t.Fatalf("push %d with %d free", len(ids), r.free())
		}
		r.pushSend(wrs)
	}
	retire := func(id uint64, want bool, free int) {
		t.Helper()
		if got := r.retire(id); got != want {
			t.Fatalf("retire(%d) = %v, want %v", id, got, want)
		}
		if got := r.free(); got != free {
			t.Fatalf("after retire(%d): %d free, want %d", id, got, free)
		}
	}
	for round := uint64(0); round < 7; round++ { // the head at every index of the ring
		b := round * 10
		send(b+1, b+2, b+3)
		retire(b+9, false, 2)
		retire(b+1, true, 3) // in order
		send(b+4, b+5, b+6)
		retire(b+5, true, 4) // out of order: 2, 3, 4 and 5 go with it
		retire(b+2, false, 4)
		retire(b+6, true, 5)
		retire(b+6, false, 5)
	}
	rr := newRing(3)
	for i := uint64(0); i < 10; i++ { // receives: one at a time, wrapping
		rr.pushRecv([]verbs.RecvWR{{ID: i}, {ID: i + 100}})
		if !rr.retire(i) || !rr.retire(i+100) || rr.free() != 3 {
			t.Fatalf("receive round %d: free %d", i, rr.free())
		}
	}
}
