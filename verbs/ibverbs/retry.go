//go:build ibverbs

package ibverbs

import (
	"log/slog"
	"syscall"
	"time"
)

// Back-off of the rdma_cm event loop after a failed rdma_get_cm_event
// (other than EAGAIN), and the interval of its rate-limited log line.
const (
	eventBackoffMin = 5 * time.Millisecond
	eventBackoffMax = time.Second
	eventLogEvery   = 10 * time.Second
)

// eventRetry is the event loop's policy for errors of rdma_get_cm_event:
// the loop never ends on one (ENOMEM, ENOBUFS, EMFILE… are temporary; an
// event left unread keeps the channel readable but Go's poller is
// edge-triggered, so the loop must retry by itself rather than park until
// the next event). Each error is counted, logged at most once per
// eventLogEvery with the number suppressed, and followed by a back-off
// (eventBackoffMin doubling to eventBackoffMax, reset by a success).
// Used only by the event goroutine.
type eventRetry struct {
	log        *slog.Logger
	backoff    time.Duration
	lastLog    time.Time
	suppressed int
	errors     uint64
}

// failed records errno e at now and returns how long to wait before
// retrying.
func (r *eventRetry) failed(e syscall.Errno, now time.Time) time.Duration {
	r.errors++
	if r.backoff == 0 {
		r.backoff = eventBackoffMin
	} else {
		r.backoff = min(2*r.backoff, eventBackoffMax)
	}
	if r.lastLog.IsZero() || now.Sub(r.lastLog) >= eventLogEvery {
		r.log.Error("ibverbs: rdma_get_cm_event failed; retrying", "err", e,
			"backoff", r.backoff, "suppressed", r.suppressed)
		r.lastLog, r.suppressed = now, 0
	} else {
		r.suppressed++
	}
	return r.backoff
}

// ok records a successful read of an event.
func (r *eventRetry) ok() { r.backoff = 0 }
