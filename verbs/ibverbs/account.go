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
// work queue, a ring of the wr_ids it posted; Poll retires entries as it
// hands out completions: a send completion retires every WR up to and
// including the one it reports (unsignaled WRs before it completed
// silently), a receive completion retires one.
type wqRing struct {
	mu   sync.Mutex // guards the fields below
	ids  []uint64
	head int // index of the oldest outstanding entry
	n    int // outstanding entries
}

func newRing(capacity int) *wqRing {
	return &wqRing{ids: make([]uint64, capacity)}
}

// free is the number of slots left.
func (r *wqRing) free() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids) - r.n
}

// pushSend and pushRecv record posted work requests (call with
// len(wrs) ≤ free()).
func (r *wqRing) pushSend(wrs []verbs.SendWR) {
	r.mu.Lock()
	j := r.tail()
	for i := range wrs {
		j = r.put(j, wrs[i].ID)
	}
	r.n += len(wrs)
	r.mu.Unlock()
}

func (r *wqRing) pushRecv(wrs []verbs.RecvWR) {
	r.mu.Lock()
	j := r.tail()
	for i := range wrs {
		j = r.put(j, wrs[i].ID)
	}
	r.n += len(wrs)
	r.mu.Unlock()
}

// put stores id at index j and returns the next index (under mu).
func (r *wqRing) put(j int, id uint64) int {
	r.ids[j] = id
	if j++; j == len(r.ids) {
		j = 0
	}
	return j
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
