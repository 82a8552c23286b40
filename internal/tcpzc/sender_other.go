//go:build !linux

package tcpzc

import (
	"syscall"
	"time"
)

// Sender is Linux-only (io_uring); elsewhere New makes none.
type Sender struct{}

// New reports zero copy unavailable for good.
func New(func([]uint16), *Counters) (*Sender, bool) { return nil, true }

// NewHost reports zero copy unavailable for good.
func NewHost(*Counters) (*Sender, bool) { return nil, true }

func (*Sender) Send(uintptr, []syscall.Iovec, *uint32) (int, syscall.Errno) { return 0, ErrOff }
func (*Sender) Seal(_ uint32, _ []uint16, out []byte) ([]byte, bool)        { return out, false }
func (*Sender) Unusable() bool                                              { return true }
func (*Sender) Copies() bool                                                { return false }
func (*Sender) Reap()                                                       {}
func (*Sender) Pending() int                                                { return 0 }
func (*Sender) Wait(time.Duration)                                          {}
func (*Sender) Close(time.Duration)                                         {}

// AbandonedSenders is how many Senders the janitor holds.
func AbandonedSenders() int { return 0 }
