package tcp

import (
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/internal/spin"
)

// spinState is the reader's spin before parking (see spin). Reader
// goroutine only.
type spinState struct {
	limit  int  // Config.PollSpins; ≤ 0: never spin
	budget int  // passes the next spin may make (internal/spin)
	parked bool // the last read parked in the poller
	wakes  int  // wake-ups since the budget last went back to limit
	ev     [8]unix.EpollEvent
}

// exploreWakes: every this many wake-ups from a park, the budget goes back
// to its limit, to find out whether spinning pays again (internal/spin
// only shrinks a budget that keeps running out, and a spin that never
// finds anything cannot grow it).
const exploreWakes = 64

func (s *spinState) init(limit int, fd uintptr) {
	s.limit, s.budget = limit, max(limit, 0)
	// Every connection's socket is in the parked set (once the process
	// spins: nbsys.UseParked), so that a spinning reader stops for it;
	// the kernel drops it when the socket closes.
	_ = nbsys.WatchParked(int(fd), nbsys.ParkedIn)
}

// woke records a read after a park.
func (s *spinState) woke() {
	if !s.parked {
		return
	}
	s.parked = false
	if s.wakes++; s.wakes >= exploreWakes {
		s.wakes, s.budget = 0, max(s.limit, 0)
		return
	}
	s.budget = spin.Next(s.budget, s.limit, spin.Woke)
}

// spin is what the reader of a connected I/O queue does, its batch ended,
// on an empty socket before it parks in the poller: up to budget passes,
// each a yield (runtime.Gosched: any runnable goroutine runs), a poll of
// the backends of the last batch (Queue.Poll: I/O they completed is
// answered from here, on this goroutine) and a look at the process's
// parked set (nbsys.ParkedReady); it reads as soon as its socket is
// readable and reports whether it read (r.n, r.err set as by read). It
// parks early, keeping the budget, when another descriptor of the set is
// ready — a goroutine waiting for it needs the runtime's poll, which a
// spinner holds off — or when the connection drains. Passes that answer
// I/O do not count against the budget.
//
// Why: parking costs every command of a host at low queue depth a trip
// through the runtime's poller (epoll_pwait, a thread's wake-up, the CPU
// leaving its idle state), and a completion the backend's reaper takes
// costs another. The budget adapts (internal/spin): it grows while
// spinning finds the next command and halves each time it runs out, so a
// queue whose host pauses longer than a spin soon parks almost at once
// (and tries a whole spin again every exploreWakes wake-ups).
func (r *sockReader) spin(fd uintptr) bool {
	s, c := &r.sp, r.c
	if s.budget <= 0 || !c.zcIO.Load() {
		return false
	}
	for k := 0; k < s.budget; k++ {
		runtime.Gosched()
		if c.q.Poll() > 0 {
			k = 0
		}
		self, others := nbsys.ParkedReady(int(fd), s.ev[:])
		if others {
			c.l.stats.spinYields.Add(1)
			return false
		}
		if c.draining.Load() {
			return false
		}
		if !self {
			continue
		}
		n, err := rawRead(fd, r.p)
		if err == syscall.EAGAIN || err == syscall.EINTR {
			continue
		}
		s.budget = spin.Next(s.budget, s.limit, spin.Found)
		c.l.stats.spinReads.Add(1)
		r.took(n, err)
		return true
	}
	s.budget = spin.Next(s.budget, s.limit, spin.Slept)
	c.l.stats.spinRunOuts.Add(1)
	return false
}

// parkedOut puts the socket in the parked set for room as well as input
// (out) or for input only again, and reports whether it now is there for
// room.
func parkedOut(fd uintptr, out bool) bool {
	ev := nbsys.ParkedIn
	if out {
		ev |= nbsys.ParkedOut
	}
	return nbsys.WatchParked(int(fd), ev) == nil && out
}
