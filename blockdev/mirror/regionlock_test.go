package mirror

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRegionLocksExclude: random shared holders (ranges of regions, some
// wrapping the stripe table, blocking and non-blocking) and one exclusive
// holder at a time never hold the same stripe together, and nobody
// deadlocks.
func TestRegionLocksExclude(t *testing.T) {
	var l regionLocks
	l.init()
	var shared [nStripes]atomic.Int32 // shared holders per stripe, as the test sees them
	var excl [nStripes]atomic.Bool
	var wg sync.WaitGroup
	check := func(s int, what string) {
		if excl[s].Load() {
			t.Errorf("%s: stripe %d held exclusively meanwhile", what, s)
		}
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range 3000 {
				r0 := uint64(rng.IntN(3 * nStripes))
				var r1 uint64
				switch rng.IntN(8) {
				case 0:
					r1 = r0 + uint64(rng.IntN(2*nStripes)) // may cover everything
				default:
					r1 = r0 + uint64(rng.IntN(3))
				}
				if rng.IntN(2) == 0 {
					l.lockShared(r0, r1)
				} else if !l.tryShared(r0, r1) {
					continue
				}
				stripes(r0, r1, func(s int) bool { shared[s].Add(1); check(s, "shared"); return true })
				stripes(r0, r1, func(s int) bool { shared[s].Add(-1); return true })
				l.unlockShared(r0, r1)
			}
		}()
	}
	var copyMu sync.Mutex
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 2))
			for range 2000 {
				r := uint64(rng.IntN(4 * nStripes))
				s := int(r % nStripes)
				copyMu.Lock()
				l.lockExclusive(r)
				excl[s].Store(true)
				if n := shared[s].Load(); n != 0 {
					t.Errorf("exclusive: stripe %d has %d shared holders", s, n)
				}
				excl[s].Store(false)
				l.unlockExclusive(r)
				copyMu.Unlock()
			}
		}()
	}
	wg.Wait()
	for s := range nStripes {
		if v := l.s[s].Load(); v != 0 {
			t.Fatalf("stripe %d left at %#x", s, v)
		}
	}
}

// TestBitmap: ranges across words, clamping, next and testAndClear.
func TestBitmap(t *testing.T) {
	b := newBitmap(200, false)
	b.setRange(3, 3)
	b.setRange(60, 130)
	b.setRange(199, 500)
	if got := b.count(); got != 1+71+1 {
		t.Fatalf("count %d", got)
	}
	var seen []uint64
	for r, ok := b.next(0); ok; r, ok = b.next(r + 1) {
		seen = append(seen, r)
	}
	if len(seen) != 73 || seen[0] != 3 || seen[1] != 60 || seen[71] != 130 || seen[72] != 199 {
		t.Fatalf("next walked %v", seen)
	}
	if b.countBelow(61) != 2 || b.countBelow(64) != 5 || b.countBelow(1000) != 73 {
		t.Fatalf("countBelow: %d %d %d", b.countBelow(61), b.countBelow(64), b.countBelow(1000))
	}
	if !b.testAndClear(60) || b.testAndClear(60) || b.test(60) {
		t.Fatal("testAndClear")
	}
	g := b.grown(300, true)
	if g.count() != 72+100 || !g.test(250) || !g.test(3) {
		t.Fatalf("grown: count %d", g.count())
	}
	if newBitmap(0, true).count() != 0 || newBitmap(65, true).count() != 65 {
		t.Fatal("newBitmap(all)")
	}
}
