//go:build !linux

package file

import "github.com/rdmablk/rdmablk/blockdev"

// Backend is only implemented on Linux.
type Backend struct{ blockdev.Backend }

// Open returns ErrUnsupportedFile on this platform.
func Open(path string, opts Options) (*Backend, error) { return nil, ErrUnsupportedFile }

// CheckSize returns ErrUnsupportedFile on this platform.
func CheckSize(path string, size int64) error { return ErrUnsupportedFile }
