//go:build !linux

package uring

import "time"

// Ring128 is unavailable off Linux.
type Ring128 struct{}

func NewSQE128(int, uint32) (*Ring128, error)                { return nil, ErrUnsupported }
func (*Ring128) FD() int                                     { return -1 }
func (*Ring128) Entries() int                                { return 0 }
func (*Ring128) Next() *SQE128                               { return nil }
func (*Ring128) Submit() (int, error)                        { return 0, ErrUnsupported }
func (*Ring128) SubmitAndWait(int) (int, error)              { return 0, ErrUnsupported }
func (*Ring128) Wait() error                                 { return ErrUnsupported }
func (*Ring128) SubmitAndWaitFor(time.Duration) (int, error) { return 0, ErrUnsupported }
func (*Ring128) Reap([]CQE) int                              { return 0 }
func (*Ring128) Close() error                                { return nil }
