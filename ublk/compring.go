package ublk

import (
	"runtime"
	"sync/atomic"
)

// compRing carries a queue's backend completions to the queue goroutine:
// a bounded multi-producer, single-consumer ring with a sequence number
// per cell (D. Vyukov's bounded queue). Complete (any goroutine) pushes,
// the queue goroutine pops. Unlike a channel it takes no lock: a push is
// an atomic add, a load and a store, a pop a load and a store —
// on the one-vCPU lab guest a buffered channel's send and receive cost
// the attachment ~350 instructions per request in runtime locks.
//
// Capacity: a power of two ≥ the queue depth. At most depth completions
// are outstanding (a tag completes once per request and is re-armed only
// after its completion was popped), so a push never finds its cell still
// full; it would wait (yielding) rather than overwrite if it did.
//
// A pop stops at a cell whose producer has reserved it but not yet
// published it, even if later cells are published: the queue counts
// completions in posted after the push, so it loops again rather than
// sleep, and the late producer finishes within a few instructions —
// unless it is descheduled right there, when the queue goroutine loops
// (each pass a non-waiting io_uring_enter) until that producer runs again
// (on a one-P process, at its next yield: 4–8 ms at most). A channel send
// has no such half-done state; the window is a few instructions wide.
type compRing struct {
	cells []compCell
	mask  uint64
	tail  atomic.Uint64 // next position to reserve (producers)
	head  uint64        // next position to pop (queue goroutine only)
}

type compCell struct {
	// seq == pos: free for the push at pos; pos+1: holds that push's
	// completion; the pop stores pos+len(cells), freeing it for the push
	// one lap later.
	seq atomic.Uint64
	c   completion
}

func newCompRing(depth int) *compRing {
	n := 1
	for n < depth {
		n <<= 1
	}
	r := &compRing{cells: make([]compCell, n), mask: uint64(n - 1)}
	for i := range r.cells {
		r.cells[i].seq.Store(uint64(i))
	}
	return r
}

// push adds c. Any goroutine; never blocks while the outstanding bound
// holds.
func (r *compRing) push(c completion) {
	pos := r.tail.Add(1) - 1
	cell := &r.cells[pos&r.mask]
	for cell.seq.Load() != pos {
		runtime.Gosched() // only if the bound were broken: never overwrite
	}
	cell.c = c
	cell.seq.Store(pos + 1)
}

// pop takes the oldest published completion. Queue goroutine only.
func (r *compRing) pop() (completion, bool) {
	cell := &r.cells[r.head&r.mask]
	if cell.seq.Load() != r.head+1 {
		return completion{}, false
	}
	c := cell.c
	cell.seq.Store(r.head + uint64(len(r.cells)))
	r.head++
	return c, true
}
