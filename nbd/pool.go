package nbd

import (
	"math/bits"
	"sync"
)

// Payload buffers come from pools of power-of-two size classes from 4 KiB
// to MaxRequest, so a steady load allocates nothing.
const (
	minClassShift = 12
	maxClassShift = 25 // log2(MaxRequest)
)

var classes [maxClassShift - minClassShift + 1]sync.Pool

// classOf is the size class index for n bytes (n ≤ MaxRequest).
func classOf(n int) int {
	if n <= 1<<minClassShift {
		return 0
	}
	return bits.Len(uint(n-1)) - minClassShift
}

// getBuf returns a buffer of length n.
func getBuf(n int) *[]byte {
	c := classOf(n)
	if p, ok := classes[c].Get().(*[]byte); ok {
		*p = (*p)[:n]
		return p
	}
	b := make([]byte, n, 1<<(c+minClassShift))
	return &b
}

// putBuf returns a buffer from getBuf.
func putBuf(p *[]byte) {
	classes[classOf(cap(*p))].Put(p)
}
