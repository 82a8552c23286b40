package nbsys

// IdleWaits tells a poll loop that waits in raw calls (Poll, EpollWait, a
// ring's raw io_uring_enter) when it has gone idle, so that its next wait
// should be an ordinary blocking system call instead (PollBlocking, a
// ring's plain io_uring_enter), followed by one runtime.Gosched.
//
// Why: a raw wait keeps the goroutine's P, so through an idle spell the
// runtime signals the loop every 10–20 ms (it has not rescheduled) and,
// with a Yielder, the loop yields after each: in the lab an idle ublk
// queue goroutine was preempted 39.5 and yielded 39.9 times a second, each
// a hand-off of its locked thread (execution trace of run
// 2026-12-06-2019), and the runtime's monitor thread never slept. A
// blocking wait gives the P up until an event comes; the Gosched after it
// starts a new scheduling round, since the runtime counts the sleep as one
// long run of the P and would preempt the loop shortly. Under load raw
// waits are short and end with events, so the loop keeps its P.
//
// Idle is IdleThreshold raw waits in a row that ended with nothing (their
// timeout, or a signal). Not one: a stray signal (a CPU profile's) can end
// one busy wait early. The zero value is ready; it belongs to the loop's
// goroutine.
type IdleWaits struct {
	empty int // raw waits in a row that ended with nothing
}

// IdleThreshold is how many empty raw waits in a row make a loop idle.
const IdleThreshold = 2

// Ended records how a raw wait ended: with events or with nothing.
func (w *IdleWaits) Ended(events bool) {
	if events {
		w.empty = 0
	} else {
		w.empty++
	}
}

// Idle reports whether the next wait should give the P up, and if so
// starts the count over (the blocking wait is not a raw one).
func (w *IdleWaits) Idle() bool {
	if w.empty < IdleThreshold {
		return false
	}
	w.empty = 0
	return true
}
