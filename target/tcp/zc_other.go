//go:build !linux

package tcp

import (
	"syscall"
	"time"
)

// zcSender is Linux-only (io_uring); elsewhere no connection gets one.
type zcSender struct{}

const errZCOff = syscall.Errno(0x7fffffff)

func newZCSender(func([]uint16), *counters) (*zcSender, bool) { return nil, true }

func (*zcSender) send(uintptr, []iovec, *uint32) (int, syscall.Errno)  { return 0, errZCOff }
func (*zcSender) seal(_ uint32, _ []uint16, out []byte) ([]byte, bool) { return out, false }
func (*zcSender) unusable() bool                                       { return true }
func (*zcSender) copies() bool                                         { return false }
func (*zcSender) reap()                                                {}
func (*zcSender) wait(time.Duration)                                   {}
func (*zcSender) close(time.Duration)                                  {}

func abandonedSenders() int { return 0 }
