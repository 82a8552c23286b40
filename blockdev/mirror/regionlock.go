package mirror

import (
	"sync"
	"sync/atomic"
)

// nStripes is the number of region locks. Regions map onto them modulo
// nStripes, so memory is fixed whatever the volume size; a rebuild that
// holds one stripe delays writes to the other regions of that stripe only
// while it copies one region.
const nStripes = 1024

// exclBit marks a stripe held, or wanted, by the rebuild.
const exclBit = int64(1) << 62

// regionLocks are shared/exclusive locks over the volume's regions.
//
// Every write-class I/O (write, write zeroes, discard) holds the stripes
// of the regions it touches in shared mode from before it reads the leg
// set until it completes (all legs done, every fault recorded). The
// rebuild holds one stripe in exclusive mode while it copies one region.
// Shared acquisition is one atomic add per stripe when no copy is under
// way; the mutex and condition variable are only touched when a shared
// holder meets the exclusive bit, or an exclusive holder must wait for
// shared holders to drain.
//
// Deadlock freedom: at most one exclusive holder exists at a time
// (Mirror.copyMu), and it holds a single stripe and waits for nothing
// else while holding it. A shared holder may wait for a stripe while
// holding others, but only for the exclusive holder, which never waits on
// a shared holder's other stripes.
type regionLocks struct {
	s [nStripes]atomic.Int64 // shared count | exclBit

	mu   sync.Mutex // guards nothing but pairs with cond (slow path only)
	cond sync.Cond
}

func (l *regionLocks) init() { l.cond.L = &l.mu }

// stripes calls fn for every stripe of regions [r0, r1], each once, in
// ascending region order.
func stripes(r0, r1 uint64, fn func(s int) bool) bool {
	if r1-r0 >= nStripes-1 {
		for s := range nStripes {
			if !fn(s) {
				return false
			}
		}
		return true
	}
	for r := r0; r <= r1; r++ {
		if !fn(int(r % nStripes)) {
			return false
		}
	}
	return true
}

// tryShared takes regions [r0, r1] in shared mode unless one of them is
// held or wanted exclusively; then it takes nothing and returns false.
// It never blocks (the async submission path).
func (l *regionLocks) tryShared(r0, r1 uint64) bool {
	var got uint64 // regions taken so far, for the roll back
	ok := stripes(r0, r1, func(s int) bool {
		if !l.tryOne(s) {
			return false
		}
		got++
		return true
	})
	if !ok {
		if got > 0 {
			l.releaseN(r0, r1, got)
		}
	}
	return ok
}

// tryOne takes stripe s shared unless the exclusive bit is set.
func (l *regionLocks) tryOne(s int) bool {
	if l.s[s].Add(1)&exclBit == 0 {
		return true
	}
	l.dropOne(s)
	return false
}

// lockShared takes regions [r0, r1] in shared mode, waiting while the
// rebuild copies one of them.
func (l *regionLocks) lockShared(r0, r1 uint64) {
	stripes(r0, r1, func(s int) bool {
		for !l.tryOne(s) {
			l.mu.Lock()
			for l.s[s].Load()&exclBit != 0 {
				l.cond.Wait()
			}
			l.mu.Unlock()
		}
		return true
	})
}

// unlockShared releases regions [r0, r1] taken with lockShared or
// tryShared.
func (l *regionLocks) unlockShared(r0, r1 uint64) {
	stripes(r0, r1, func(s int) bool { l.dropOne(s); return true })
}

// releaseN releases the first n stripes of regions [r0, r1].
func (l *regionLocks) releaseN(r0, r1, n uint64) {
	stripes(r0, r1, func(s int) bool {
		if n == 0 {
			return false
		}
		n--
		l.dropOne(s)
		return true
	})
}

// dropOne releases one shared hold of stripe s and wakes the exclusive
// waiter when it was the last.
func (l *regionLocks) dropOne(s int) {
	if l.s[s].Add(-1) == exclBit {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// lockExclusive takes region r's stripe exclusively: new shared holders
// wait (or, async, refuse) and it waits for the present ones to finish.
// The caller holds Mirror.copyMu, so there is one exclusive holder.
func (l *regionLocks) lockExclusive(r uint64) {
	s := int(r % nStripes)
	if l.s[s].Or(exclBit) == 0 {
		return
	}
	l.mu.Lock()
	for l.s[s].Load() != exclBit {
		l.cond.Wait()
	}
	l.mu.Unlock()
}

// unlockExclusive releases region r's stripe and wakes waiting writers.
func (l *regionLocks) unlockExclusive(r uint64) {
	s := int(r % nStripes)
	l.s[s].And(^exclBit)
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
}
