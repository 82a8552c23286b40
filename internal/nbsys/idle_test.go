package nbsys

import "testing"

// TestIdleWaits: IdleThreshold empty raw waits in a row make the loop idle
// once; a wait with events in between starts the count over.
func TestIdleWaits(t *testing.T) {
	var w IdleWaits
	for i := 0; i < IdleThreshold-1; i++ {
		w.Ended(false)
	}
	w.Ended(true)
	for i := 0; i < IdleThreshold-1; i++ {
		w.Ended(false)
		if w.Idle() {
			t.Fatalf("idle after %d empty waits (threshold %d)", i+1, IdleThreshold)
		}
	}
	w.Ended(false)
	if !w.Idle() {
		t.Fatalf("not idle after %d empty waits", IdleThreshold)
	}
	if w.Idle() {
		t.Fatal("idle twice for one spell: the blocking wait must start the count over")
	}
}
