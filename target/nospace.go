package target

import (
	"errors"
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
		t.log.Warn("nvmet: backing store full on flush of every namespace; answering Capacity Exceeded", "err", err)
		return
	}
	n.noSpace.Add(1)
	now := t.opts.clock.Now().UnixNano()
	last := n.noSpaceLogged.Load()
	if last != 0 && now-last < int64(noSpaceLogEvery) {
		return
	}
	if !n.noSpaceLogged.CompareAndSwap(last, now) {
		return // another goroutine logs this minute
	}
	t.log.Warn("nvmet: backing store full (ENOSPC/EDQUOT); answering Capacity Exceeded",
		"subnqn", n.subNQN, "nsid", n.nsid, "errors", n.noSpace.Load(), "err", err,
		"next_log_after", noSpaceLogEvery)
}
