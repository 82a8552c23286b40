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
	for i := range wrs {
		j := (r.head + r.n) % len(r.ids)
		r.ids[j] = wrs[i].ID
		r.sig[j] = signalAll || wrs[i].Flags&verbs.SendSignaled != 0
		r.n++
	}
	r.mu.Unlock()
}

func (r *wqRing) pushRecv(wrs []verbs.RecvWR) {
	r.mu.Lock()
	for i := range wrs {
		j := (r.head + r.n) % len(r.ids)
		r.ids[j] = wrs[i].ID
		r.n++
	}
	r.mu.Unlock()
}

// retire frees the entries up to and including the first one with wr_id
// id; it reports false (and frees nothing) when no outstanding entry has
// that id.
func (r *wqRing) retire(id uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := 0; k < r.n; k++ {
		if r.ids[(r.head+k)%len(r.ids)] == id {
			r.head = (r.head + k + 1) % len(r.ids)
			r.n -= k + 1
			return true
		}
	}
	return false
}
