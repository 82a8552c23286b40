package soft

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/verbs"
)

// The soft CQ implements verbs.FDNotifier with an eventfd, so that
// consumers' epoll paths (the target's poll groups) run against the test
// double as they do against rdma-core's completion channels: the armed
// CQ's event writes the eventfd, TakeNotify reads it.
var _ verbs.FDNotifier = (*completionQueue)(nil)

// DetachNotify implements verbs.FDNotifier.
func (cq *completionQueue) DetachNotify() (int, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.closed {
		return -1, fmt.Errorf("%w: completion queue", verbs.ErrClosed)
	}
	if cq.efd < 0 {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			return -1, fmt.Errorf("soft: completion queue eventfd: %w", err)
		}
		cq.efd = fd
	}
	cq.detached = true
	return cq.efd, nil
}

// TakeNotify implements verbs.FDNotifier.
func (cq *completionQueue) TakeNotify() bool {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	return cq.drainFDLocked()
}

// AttachNotify implements verbs.FDNotifier.
func (cq *completionQueue) AttachNotify() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if !cq.detached {
		return nil
	}
	cq.detached = false
	if cq.drainFDLocked() {
		cq.tokenLocked()
	}
	return nil
}

// fdSignalLocked makes the eventfd readable (the armed event, detached).
func (cq *completionQueue) fdSignalLocked() {
	// An eventfd write fails only when its counter would overflow (one
	// event per arm cannot reach that) or the descriptor is bad (it is
	// the CQ's own, open until Close under mu): nothing to handle.
	one := [8]byte{1}
	_, _ = unix.Write(cq.efd, one[:])
}

// drainFDLocked consumes a pending event and reports whether there was one.
func (cq *completionQueue) drainFDLocked() bool {
	if cq.efd < 0 {
		return false
	}
	var b [8]byte
	n, err := unix.Read(cq.efd, b[:])
	return err == nil && n == 8
}

// closeFDLocked releases the eventfd (Close).
func (cq *completionQueue) closeFDLocked() {
	if cq.efd >= 0 {
		_ = unix.Close(cq.efd)
		cq.efd = -1
	}
	cq.detached = false
}
