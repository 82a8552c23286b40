//go:build !unix

package initiator

import "fmt"

// allocRegistered returns n bytes of zeroed memory. Without mmap it is Go
// heap memory, which only the soft provider accepts.
func allocRegistered(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("%w: allocation of %d bytes", ErrInvalid, n)
	}
	return make([]byte, n), nil
}

// freeRegistered releases memory from allocRegistered.
func freeRegistered([]byte) {}
