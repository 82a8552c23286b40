//go:build !linux

package ublk

import (
	"errors"
	"time"
)

// ErrNoUblk: ublk is Linux-only.
var ErrNoUblk = errors.New("ublk: not supported on this platform")

type Control struct{}

func OpenControl() (*Control, error) { return nil, ErrNoUblk }
func (*Control) Close() error        { return nil }

type Options struct {
	DevID   int
	Control *Control
	Wait    time.Duration
}

type Device struct{}

type Stats struct {
	Queues, Depth int
	Requests      uint64
	Errors        uint64
	InFlight      int64
}

func Create(Backend, Options) (*Device, error)          { return nil, ErrNoUblk }
func Recover(uint32, Backend, Options) (*Device, error) { return nil, ErrNoUblk }
func (*Device) ID() uint32                              { return 0 }
func (*Device) Path() string                            { return "" }
func (*Device) Stats() Stats                            { return Stats{} }
func (*Device) Err() error                              { return nil }
func (*Device) Stop() error                             { return ErrNoUblk }
func (*Device) Detach()                                 {}

func gettid() int { return 0 }

func Available() bool                 { return false }
func (*Device) Done() <-chan struct{} { return nil }
func Remove(uint32, *Control) error   { return ErrNoUblk }
