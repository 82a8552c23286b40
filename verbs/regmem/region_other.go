//go:build !linux

package regmem

import "fmt"

// HugePageSize is the huge page size Alloc would ask for on Linux.
const HugePageSize = 2 << 20

// Region is Go heap memory off Linux (the soft provider accepts it).
type Region struct{ mem []byte }

// Alloc returns n zeroed bytes.
func Alloc(n int) (*Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("regmem: size %d", n)
	}
	return &Region{mem: make([]byte, n)}, nil
}

// Reserve is Alloc off Linux.
func Reserve(n int) (*Region, error) { return Alloc(n) }

func (r *Region) Bytes() []byte { return r.mem }
func (r *Region) Huge() bool    { return false }
func (r *Region) Free() error   { r.mem = nil; return nil }

// AdviseHuge is a no-op off Linux.
func AdviseHuge([]byte) {}
