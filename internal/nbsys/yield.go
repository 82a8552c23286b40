package nbsys

import (
	"runtime"
	"time"
)

// Yielder paces a poll loop that never parks in Go — it sleeps only in
// raw waits (Poll, EpollWait, a ring's raw io_uring_enter) and otherwise
// runs or sits in cgo calls — through the scheduler a few times every
// 10 ms, so that the runtime never has to preempt it.
//
// Why: the runtime's monitor (sysmon) preempts a goroutine whose P has
// run the same scheduling round for 10 ms (runtime retake,
// forcePreemptNS). Such a loop never starts a new round by itself, so it
// is preempted every 10 ms: a signal to its thread (a raw wait ends with
// EINTR), and, when the tick finds it inside a cgo call (a verbs post or
// arm), sysmon takes its P from that call. Taking a P makes sysmon start
// over at its fastest tick (20 µs) instead of backing off to 10 ms — so
// such a loop kept sysmon polling: in the lab's one-vCPU initiator guest
// (frontends runs 2026-12-06-1633 and -1646) the ublk attachment's sysmon
// thread used 5–9 % of the guest's CPU, a third of what the ublk queue
// thread itself used, at any GOMAXPROCS. A loop that yields on its own
// before 10 ms starts a new round each time, so sysmon neither signals
// nor takes its P and backs off (in the lab's A/Bs its CPU halved). On a
// locked thread the yields' own hand-offs took much of that back; what
// the loops gained end to end is in docs/design.md §4, and it is not a
// proven speed-up.
//
// Pass is called once per loop pass. It reads no clock per pass: every
// `every` passes it reads the clock once, yields (runtime.Gosched) and
// adapts every so that yields come yieldMin to yieldMax apart — doubling
// it when they came sooner, halving it when later. For a goroutine
// locked to its thread a yield hands the P to another thread and back
// (the same hand-off a preemption costs, without the signal); for any
// other it returns at once when nothing else is runnable.
//
// A Yielder belongs to one goroutine; its zero value is ready and yields
// on its first Pass.
type Yielder struct {
	every int       // passes between yields
	left  int       // passes until the next yield
	last  time.Time // the last yield (monotonic)

	now   func() time.Time // time.Now; tests replace it
	yield func()           // runtime.Gosched; tests replace it
}

// Bounds of the interval between two yields. The upper one stays under
// the runtime's 10 ms with room for the factor of two an adaptation step
// can overshoot by; the lower one keeps a locked thread's hand-offs to a
// few hundred a second at most.
const (
	yieldMin = 4 * time.Millisecond
	yieldMax = 8 * time.Millisecond
	// maxEvery bounds the passes between yields (a loop spinning on an
	// empty queue passes millions of times a second).
	maxEvery = 1 << 24
)

// Pass counts one pass of the loop and yields when its turn has come.
func (y *Yielder) Pass() {
	if y.left > 1 {
		y.left--
		return
	}
	y.turn()
	if y.yield != nil {
		y.yield()
		return
	}
	runtime.Gosched()
}

// turn adapts every to the time since the last turn and restarts the
// count.
func (y *Yielder) turn() {
	now := time.Now
	if y.now != nil {
		now = y.now
	}
	t := now()
	switch d := t.Sub(y.last); {
	case y.every == 0:
		y.every = 1
	case d < yieldMin && y.every < maxEvery:
		y.every *= 2
	case d > yieldMax && y.every > 1:
		y.every /= 2
	}
	y.last, y.left = t, y.every
}
