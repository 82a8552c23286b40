package replica

import (
	"fmt"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
)

// watchdog ticks every period (IOTimeout/timeoutTicks) and fails the leg
// when an I/O has been in the session for more than IOTimeout: the I/O
// path reads no clock, it only stamps each slot with the tick count.
func (l *Leg) watchdog(period time.Duration) {
	defer l.wg.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		now := l.tick.Add(1)
		for i := range l.slots {
			if overdue(now, l.slots[i].born.Load()) {
				l.expire()
				return
			}
		}
	}
}

// overdue reports whether an I/O stamped born (1 + the tick at its
// submission; 0: none) has been in flight for timeoutTicks whole periods
// at tick now: submitted at tick born-1, so at least now-born periods
// ago. An I/O submitted after the watchdog's tick moved to now, while it
// scans the slots, is stamped now+1: that difference is -1, not 2^32-1
// (which read as "overdue" took a healthy leg down — lab replperf,
// 2026-12-07-0642: "in_flight=6 oldest_op=write oldest_age_at_least=0s").
func overdue(now, born uint32) bool {
	return born != 0 && int32(now-born) >= timeoutTicks
}

// expire takes the leg down after an I/O timed out: every later I/O fails
// with the leg's error, every write-class I/O in flight completes now
// with it (their requests stay in the session, holding their slots, until
// it returns them), and the session is closed, which returns the rest —
// reads, whose buffers the session may still fill, are completed only
// then. Runs on the watchdog goroutine.
func (l *Leg) expire() {
	e := &IOError{Leg: l.cfg.SubNQN, Op: "I/O",
		Err: fmt.Errorf("%w: no completion within %v; %w", ErrTimeout, l.timeout, ErrDown)}
	if !l.down.CompareAndSwap(nil, e) {
		return
	}
	// What the leg had in flight, for whoever reads the log: the oldest
	// I/O (the one that timed out) and how many others.
	now, oldest, busy := l.tick.Load(), -1, 0
	for i := range l.slots {
		if b := l.slots[i].born.Load(); b != 0 {
			busy++
			if oldest < 0 || b < l.slots[oldest].born.Load() {
				oldest = i
			}
		}
	}
	attrs := []any{"subnqn", l.cfg.SubNQN, "timeout", l.timeout, "in_flight", busy}
	if oldest >= 0 {
		s := &l.slots[oldest]
		age := time.Duration(now+1-s.born.Load()) * l.timeout / timeoutTicks
		attrs = append(attrs, "oldest_op", initiator.IOOp(s.op.Load()).String(), "oldest_age_at_least", age)
	}
	l.log.Warn("replica I/O timed out; leg down", attrs...)
	for i := range l.slots {
		l.abandon(&l.slots[i], e)
	}
	l.s.Close()
}

// abandon completes the caller of a busy write-class slot with err before
// the session returns its request.
func (l *Leg) abandon(s *slot, err error) {
	if !s.state.CompareAndSwap(slotBusy, slotAbandoning) { // reads (slotBusyRead) wait for the session
		return
	}
	cb := s.cb
	s.state.Store(slotAbandoned)
	if cb != nil {
		cb.IODone(err)
		return
	}
	s.wake <- wakeMsg{err: err, abandoned: true}
}
