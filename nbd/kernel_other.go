//go:build !linux

package nbd

import "time"

// KernelDevice is an export attached to a kernel nbd device (Linux only).
type KernelDevice struct{ Path string }

// FreeKernelDevice reports ErrNoDevice outside Linux.
func FreeKernelDevice() (string, error) { return "", ErrNoDevice }

// AttachKernel reports ErrNoDevice outside Linux.
func (s *Server) AttachKernel(dev, name string, timeout time.Duration, conns int) (*KernelDevice, error) {
	return nil, ErrNoDevice
}

// Detach does nothing outside Linux.
func (k *KernelDevice) Detach(timeout time.Duration) error { return nil }

// Done is never closed outside Linux.
func (k *KernelDevice) Done() <-chan struct{} { return nil }
