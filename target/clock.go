package target

import "time"

// clock is the core's source of time on the control path: keep-alive
// timers and rate-limited logging. The I/O path never reads it (except on
// an error path, see nospace.go). Tests replace it (Options.clock) to drive
// keep-alive expiry without sleeping.
type clock interface {
	Now() time.Time
	// AfterFunc calls f on its own goroutine once d has passed, as
	// time.AfterFunc.
	AfterFunc(d time.Duration, f func()) timer
}

// timer is the part of *time.Timer the core uses.
type timer interface {
	Stop() bool
	Reset(d time.Duration) bool
}

// wallClock is the real clock.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }
