//go:build linux

package regmem

import (
	"fmt"
	"syscall"
)

// HugePageSize is the huge page size Alloc asks for (x86-64 and arm64
// with 4 KiB base pages).
const HugePageSize = 2 << 20

const madvHugepage = 14 // MADV_HUGEPAGE

// Region is an anonymous mapping outside the Go heap.
type Region struct {
	mem  []byte
	huge bool
}

// Alloc maps at least n bytes of zeroed memory: explicit huge pages when
// the host has enough reserved, else normal pages with transparent huge
// pages advised. The length is rounded up to the page size used.
func Alloc(n int) (*Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("regmem: size %d", n)
	}
	if n >= HugePageSize {
		hn := (n + HugePageSize - 1) / HugePageSize * HugePageSize
		m, err := syscall.Mmap(-1, 0, hn, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_HUGETLB)
		if err == nil {
			return &Region{mem: m, huge: true}, nil
		}
	}
	pg := syscall.Getpagesize()
	n = (n + pg - 1) / pg * pg
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("regmem: mmap %d bytes: %w", n, err)
	}
	if n >= HugePageSize {
		_ = syscall.Madvise(m, madvHugepage) // a hint; refusal is fine
	}
	return &Region{mem: m}, nil
}

// Bytes is the mapped memory.
func (r *Region) Bytes() []byte { return r.mem }

// Huge reports whether the region is backed by explicit huge pages.
func (r *Region) Huge() bool { return r.huge }

// Free unmaps the region. The caller guarantees nothing (no work request,
// no kernel I/O) can still access it.
func (r *Region) Free() error {
	if r.mem == nil {
		return nil
	}
	err := syscall.Munmap(r.mem)
	r.mem = nil
	return err
}
