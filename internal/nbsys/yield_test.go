package nbsys

import (
	"runtime"
	"testing"
	"time"
)

// fakeYielder is a Yielder on a clock the test moves, counting its yields.
func fakeYielder(clock *time.Time, yields *int) *Yielder {
	return &Yielder{now: func() time.Time { return *clock }, yield: func() { *yields++ }}
}

// TestYielderAdaptsToPassRate: whatever the loop's pass rate, yields
// settle within [yieldMin/2, 2*yieldMax] apart (one adaptation step
// may overshoot by its factor of two), and the clock is read only once
// per yield.
func TestYielderAdaptsToPassRate(t *testing.T) {
	for _, perPass := range []time.Duration{100 * time.Nanosecond, 3 * time.Microsecond, 250 * time.Microsecond, 20 * time.Millisecond} {
		clock := time.Unix(1000, 0)
		var yields, reads int
		y := fakeYielder(&clock, &yields)
		now := y.now
		y.now = func() time.Time { reads++; return now() }
		passes := int(2 * time.Second / perPass)
		var lastYield time.Time
		var gaps []time.Duration
		for range passes {
			before := yields
			y.Pass()
			if yields != before {
				if !lastYield.IsZero() {
					gaps = append(gaps, clock.Sub(lastYield))
				}
				lastYield = clock
			}
			clock = clock.Add(perPass)
		}
		if reads != yields {
			t.Fatalf("%v per pass: %d clock reads for %d yields", perPass, reads, yields)
		}
		// After the first quarter of the run the rate has settled.
		settled := gaps[len(gaps)/4:]
		lo, hi := yieldMin/2, 2*yieldMax
		if perPass > hi {
			lo, hi = perPass, perPass // slower than the bound: every pass yields
		}
		for _, g := range settled {
			if g < lo || g > hi {
				t.Fatalf("%v per pass: a yield %v after the previous one, want %v..%v (every %d)", perPass, g, lo, hi, y.every)
			}
		}
	}
}

// TestYielderFirstPassYields: the zero value yields at once, then counts.
func TestYielderFirstPassYields(t *testing.T) {
	clock := time.Unix(1000, 0)
	var yields int
	y := fakeYielder(&clock, &yields)
	y.Pass()
	if yields != 1 || y.every != 1 {
		t.Fatalf("first pass: %d yields, every %d; want 1, 1", yields, y.every)
	}
	// Passes faster than yieldMin double the stride at each yield: the
	// 2nd pass yields (every 2), the 3rd does not, the 4th does (every 4).
	for range 3 {
		y.Pass()
	}
	if yields != 3 || y.every != 4 {
		t.Fatalf("after 4 quick passes: %d yields, every %d; want 3, 4", yields, y.every)
	}
}

// TestYielderRealGosched: the real yield is runtime.Gosched. On one P a
// goroutine started before a thousand quick passes runs during them —
// about ten yields, each of which lets it in — while without a yield it
// would wait for the runtime's preemption, 10 ms away.
func TestYielderRealGosched(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	done := make(chan struct{})
	ran := make(chan struct{})
	go func() { close(ran); <-done }()
	defer close(done)
	var y Yielder
	for range 1000 {
		y.Pass()
	}
	select {
	case <-ran:
	default:
		t.Fatalf("the other goroutine did not run during 1,000 passes (every %d)", y.every)
	}
}

func BenchmarkYielderPass(b *testing.B) {
	b.ReportAllocs()
	var y Yielder
	for b.Loop() {
		y.Pass()
	}
}
