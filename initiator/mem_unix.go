//go:build unix

package initiator

import (
	"fmt"
	"syscall"
)

// allocRegistered returns n bytes of zeroed memory outside the Go heap
// (anonymous private mmap), suitable for registration with any provider.
// Release it with freeRegistered once no MR or QP uses it.
func allocRegistered(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: allocation of %d bytes", ErrInvalid, n)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("initiator: mmap %d bytes: %w", n, err)
	}
	return b, nil
}

// freeRegistered releases memory from allocRegistered.
func freeRegistered(b []byte) {
	if b != nil {
		_ = syscall.Munmap(b)
	}
}
