//go:build ibverbs

package ibverbs

import (
	"sync"

	"github.com/rdmablk/rdmablk/verbs"
)

// Work-queue accounting. Providers round queues up (rxe: to a power of two
// minus one) and may accept more work requests than the capacity they
// report; the verbs contract wants ErrQueueFull beyond QueuePair.Cap, with
// a slot freed only once its completion is polled, so that a CQ as deep as
// the queues it serves can never overrun. Each QP therefore keeps, per
// work queue, a ring of the wr_ids it posted (and, for the send queue,
// whether each was signaled); Poll retires entries as it hands out
// completions: a send completion retires every WR up to and including
// the one it reports (unsignaled WRs before it completed silently), a
// receive completion retires one.
type wqRing struct {
	mu   sync.Mutex // guards the fields below
	ids  []uint64
	sig  []bool
	head int // index of the oldest outstanding entry
	n    int // outstanding entries
}

func newRing(capacity int) *wqRing {
	return &wqRing{ids: make([]uint64, capacity), sig: make([]bool, capacity)}
}

// free is the number of slots left.
func (r *wqRing) free() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids) - r.n
}

// push records posted work requests (call with k ≤ free()).
func (r *wqRing) pushSend(wrs []verbs.SendWR, signalAll bool) {
	r.mu.Lock()
	j := r.tail()
	for i := range wrs {
		r.ids[j] = wrs[i].ID
		r.sig[j] = signalAll || wrs[i].Flags&verbs.SendSignaled != 0
		if j++; j == len(r.ids) {
			j = 0
		}
	}
	r.n += len(wrs)
	r.mu.Unlock()
}

func (r *wqRing) pushRecv(wrs []verbs.RecvWR) {
	r.mu.Lock()
	j := r.tail()
	for i := range wrs {
		r.ids[j] = wrs[i].ID
		if j++; j == len(r.ids) {
			j = 0
		}
	}
	r.n += len(wrs)
	r.mu.Unlock()
}

// tail is the index of the next free entry (under mu). The ring indexes
// wrap by comparison, not by division: the hot path (a post, a poll)
// takes no divide (a helper call per division under an emulator).
func (r *wqRing) tail() int {
	j := r.head + r.n
	if j >= len(r.ids) {
		j -= len(r.ids)
	}
	return j
}

// retire frees the entries up to and including the first one with wr_id
// id; it reports false (and frees nothing) when no outstanding entry has
// that id. The oldest entry is the usual one (completions in order).
func (r *wqRing) retire(id uint64) bool {
	r.mu.Lock()
	j := r.head
	for k := 1; k <= r.n; k++ {
		hit := r.ids[j] == id
		if j++; j == len(r.ids) {
			j = 0
		}
		if hit {
			r.head = j
			r.n -= k
			r.mu.Unlock()
			return true
		}
	}
	r.mu.Unlock()
	return false
}
