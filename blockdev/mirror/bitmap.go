package mirror

import (
	"math/bits"
	"sync/atomic"
)

// bitmap is a dirty-region bitmap: one bit per region of the volume,
// set while a leg is out of sync for every region written without it.
// Bits are set with atomic ORs by any number of writers and cleared only by
// the rebuild, under that region's exclusive lock (regionlock.go).
type bitmap struct {
	n     uint64 // regions
	words []atomic.Uint64
}

// newBitmap returns a bitmap of n regions, all set when all is true (a
// leg with no history: full copy).
func newBitmap(n uint64, all bool) *bitmap {
	b := &bitmap{n: n, words: make([]atomic.Uint64, (n+63)/64)}
	if all && n > 0 {
		b.setRange(0, n-1)
	}
	return b
}

// setRange sets bits [r0, r1] (inclusive), clamped to the bitmap.
func (b *bitmap) setRange(r0, r1 uint64) {
	if b.n == 0 || r0 >= b.n {
		return
	}
	r1 = min(r1, b.n-1)
	for w := r0 / 64; w <= r1/64; w++ {
		lo, hi := w*64, w*64+63
		mask := ^uint64(0)
		if r0 > lo {
			mask &= ^uint64(0) << (r0 - lo)
		}
		if r1 < hi {
			mask &= ^uint64(0) >> (hi - r1)
		}
		if b.words[w].Load()&mask != mask { // already set: no store, no cache-line bounce
			b.words[w].Or(mask)
		}
	}
}

// test reports whether bit r is set.
func (b *bitmap) test(r uint64) bool {
	return r < b.n && b.words[r/64].Load()&(1<<(r%64)) != 0
}

// testAndClear clears bit r and reports whether it was set.
func (b *bitmap) testAndClear(r uint64) bool {
	if r >= b.n {
		return false
	}
	m := uint64(1) << (r % 64)
	return b.words[r/64].And(^m)&m != 0
}

// next returns the first set bit at or after r.
func (b *bitmap) next(r uint64) (uint64, bool) {
	for r < b.n {
		w := b.words[r/64].Load() >> (r % 64)
		if w != 0 {
			r += uint64(bits.TrailingZeros64(w))
			return r, r < b.n
		}
		r = (r/64 + 1) * 64
	}
	return 0, false
}

// count returns the number of set bits.
func (b *bitmap) count() uint64 {
	var c uint64
	for i := range b.words {
		c += uint64(bits.OnesCount64(b.words[i].Load()))
	}
	return c
}

// countBelow returns the number of set bits below n.
func (b *bitmap) countBelow(n uint64) uint64 {
	n = min(n, b.n)
	var c uint64
	for i := uint64(0); i < n/64; i++ {
		c += uint64(bits.OnesCount64(b.words[i].Load()))
	}
	if r := n % 64; r != 0 {
		c += uint64(bits.OnesCount64(b.words[n/64].Load() & (1<<r - 1)))
	}
	return c
}

// grown returns a copy of b with n regions (n >= b.n); the new regions
// are set when fill is true.
func (b *bitmap) grown(n uint64, fill bool) *bitmap {
	nb := newBitmap(n, false)
	for i := range b.words {
		nb.words[i].Store(b.words[i].Load())
	}
	if fill && n > b.n {
		nb.setRange(b.n, n-1)
	}
	return nb
}
