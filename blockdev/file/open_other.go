//go:build !linux

package file

import "github.com/rdmablk/rdmablk/blockdev"

// Backend is only implemented on Linux.
type Backend struct{ blockdev.Backend }

// Open returns ErrUnsupportedFile on this platform.
func Open(path string, opts Options) (*Backend, error) { return nil, ErrUnsupportedFile }

// CheckSize returns ErrUnsupportedFile on this platform.
func CheckSize(path string, size int64) error { return ErrUnsupportedFile }

// RingGroup is only implemented on Linux.
type RingGroup struct{}

// NewRingGroup returns ErrUnsupportedFile on this platform.
func NewRingGroup(GroupOptions) (*RingGroup, error) { return nil, ErrUnsupportedFile }

// DefaultRingGroup returns ErrUnsupportedFile on this platform.
func DefaultRingGroup() (*RingGroup, error) { return nil, ErrUnsupportedFile }

// Rings returns 0.
func (*RingGroup) Rings() int { return 0 }

// Close does nothing.
func (*RingGroup) Close() error { return nil }

// ConfigureDefaultRingGroup does nothing on this platform.
func ConfigureDefaultRingGroup(GroupOptions) error { return nil }
