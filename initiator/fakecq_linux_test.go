package initiator

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/verbs"
)

// The fake CQ's verbs.FDNotifier, as rdma-core's completion channel
// behaves: an eventfd made readable by the armed event while detached.
var _ verbs.FDNotifier = (*fakeCQ)(nil)

func (c *fakeCQ) DetachNotify() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.efd <= 0 {
		fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if err != nil {
			return -1, fmt.Errorf("fake CQ eventfd: %w", err)
		}
		c.efd = fd
	}
	c.detached = true
	return c.efd, nil
}

func (c *fakeCQ) TakeNotify() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.takeFDLocked()
}

func (c *fakeCQ) AttachNotify() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.detached = false
	if c.takeFDLocked() {
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}
	return nil
}

func (c *fakeCQ) signalFDLocked() {
	one := [8]byte{1}
	_, _ = unix.Write(c.efd, one[:])
}

func (c *fakeCQ) takeFDLocked() bool {
	if c.efd <= 0 {
		return false
	}
	var b [8]byte
	n, err := unix.Read(c.efd, b[:])
	return err == nil && n == 8
}
