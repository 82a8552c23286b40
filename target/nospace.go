package target

import (
	"errors"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
)

// noSpaceLogEvery is how often a namespace that keeps failing writes for
// lack of space logs it: once per minute, so that a full filesystem under
// load leaves one line a minute per volume, not one per I/O.
const noSpaceLogEvery = time.Minute

// isNoSpace reports a backend error that means the backing store is full
// or over quota: blockdev.ErrNoSpace, or an ENOSPC / EDQUOT a backend
// passed through unmapped.
func isNoSpace(err error) bool {
	return errors.Is(err, blockdev.ErrNoSpace) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EDQUOT)
}

// noSpace counts a Capacity Exceeded completion of namespace n (nil for a
// flush of every namespace) and logs it at most once per noSpaceLogEvery
// per namespace. It runs on whatever goroutine completed the I/O; the
// clock is read here, on this error path only.
func (t *Target) noSpace(n *namespace, err error) {
	t.noSpaceErrs.Add(1)
	if n == nil {
		if logDue(&t.noSpaceLogged, t.opts.clock.Now().UnixNano()) {
			t.log.Warn("nvmet: backing store full on flush of every namespace; answering Capacity Exceeded", "err", err)
		}
		return
	}
	n.noSpace.Add(1)
	if !logDue(&n.noSpaceLogged, t.opts.clock.Now().UnixNano()) {
		return
	}
	t.log.Warn("nvmet: backing store full (ENOSPC/EDQUOT); answering Capacity Exceeded",
		"subnqn", n.subNQN, "nsid", n.nsid, "errors", n.noSpace.Load(), "err", err,
		"next_log_after", noSpaceLogEvery)
}

// logDue reports whether a rate-limited log line is due at now (UnixNano)
// given the time of the last one in *last, and claims it: of concurrent
// callers in one period, exactly one gets true.
func logDue(last *atomic.Int64, now int64) bool {
	l := last.Load()
	if l != 0 && now-l < int64(noSpaceLogEvery) {
		return false
	}
	return last.CompareAndSwap(l, now)
}
