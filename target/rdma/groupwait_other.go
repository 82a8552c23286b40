//go:build !linux

package rdma

import (
	"errors"

	"github.com/rdmablk/rdmablk/verbs"
)

// Without epoll, poll groups sleep on their bell channel (groupwait_linux.go).
type epollWaiter struct{}

func newEpollWaiter() (*epollWaiter, error) { return nil, errors.ErrUnsupported }

func (w *epollWaiter) attach(verbs.FDNotifier) error { return errors.ErrUnsupported }
func (w *epollWaiter) detach(verbs.FDNotifier) error { return nil }
func (w *epollWaiter) ring()                         {}
func (w *epollWaiter) disarm()                       {}
func (w *epollWaiter) sleep() error                  { return errors.ErrUnsupported }
func (w *epollWaiter) close()                        {}
