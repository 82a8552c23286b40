//go:build !linux

package uring

import "time"

// Ring is unavailable off Linux.
type Ring struct{}

func New(int) (*Ring, error)                      { return nil, ErrUnsupported }
func NewFlags(int, uint32) (*Ring, error)         { return nil, ErrUnsupported }
func (*Ring) Entries() int                        { return 0 }
func (*Ring) Prepare(*SQE) error                  { return ErrUnsupported }
func (*Ring) Space() int                          { return 0 }
func (*Ring) Submit() (int, error)                { return 0, ErrUnsupported }
func (*Ring) Wait() error                         { return ErrUnsupported }
func (*Ring) WaitFor(time.Duration) (bool, error) { return false, ErrUnsupported }
func (*Ring) Reap([]CQE) int                      { return 0 }
func (*Ring) Posted() bool                        { return false }
func (*Ring) RegisterBuffers([][]byte) error      { return ErrUnsupported }
func (*Ring) RegisterEventFD(int) error           { return ErrUnsupported }
func (*Ring) PauseEventFD() bool                  { return false }
func (*Ring) ResumeEventFD()                      {}
func (*Ring) EventFDPaused() bool                 { return false }
func (*Ring) UnregisterBuffers() error            { return ErrUnsupported }
func (*Ring) Close() error                        { return nil }

// MaxFixedBuffer is the largest fixed buffer table entry (1 GiB).
const MaxFixedBuffer = 1 << 30

func (*Ring) RegisterSparse(int) error       { return ErrUnsupported }
func (*Ring) UpdateBuffer(int, []byte) error { return ErrUnsupported }
