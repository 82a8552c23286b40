package spin

import "testing"

// The spin budget: found work doubles it, sleeping halves it, a wake-up
// adds one; it stays within [0, limit]. An idle queue reaches at most 2
// after a few sleeps.
func TestNext(t *testing.T) {
	const limit = 32
	b := limit
	for range 6 {
		b = Next(b, limit, Slept)
		b = Next(b, limit, Woke)
	}
	if b > 2 {
		t.Fatalf("budget %d after six idle sleeps, want at most 2", b)
	}
	if b = Next(0, limit, Slept); b != 0 {
		t.Fatalf("budget below 0: %d", b)
	}
	for range 6 {
		b = Next(b, limit, Found)
	}
	if b != limit {
		t.Fatalf("budget %d after spinning kept finding work, want the limit %d", b, limit)
	}
	if b = Next(5, 0, Found); b != 0 {
		t.Fatalf("limit 0: budget %d", b)
	}
	if b = Next(5, -1, Woke); b != 0 {
		t.Fatalf("limit -1: budget %d", b)
	}
}
