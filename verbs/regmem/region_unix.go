//go:build linux

package regmem

import (
	"fmt"
	"syscall"
	"unsafe"
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
// the host has enough reserved, else normal pages (see AdviseHuge). The
// length is rounded up to the page size used.
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
	return &Region{mem: m}, nil
}

// Reserve maps at least n bytes of zeroed memory on normal pages without
// reserving swap or huge pages for them (MAP_NORESERVE): address space only,
// which costs no resident memory until a page is touched or registered
// (registration pins the pages it covers). For memory registered in parts,
// later or never (a queue's data buffers, registered only after the host
// proved itself with a Fabrics Connect). Use AdviseHuge on the parts that
// are worth transparent huge pages.
func Reserve(n int) (*Region, error) {
	if n <= 0 {
		return nil, fmt.Errorf("regmem: size %d", n)
	}
	pg := syscall.Getpagesize()
	n = (n + pg - 1) / pg * pg
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_ANON|syscall.MAP_PRIVATE|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, fmt.Errorf("regmem: mmap %d bytes: %w", n, err)
	}
	return &Region{mem: m}, nil
}

// AdviseHuge asks for transparent huge pages on the whole 2 MiB extents
// inside b (a part of a Region). Use it for memory that is touched in
// full under load (data buffer pools): a huge page is resident as a whole
// once any byte of it is touched, so sparsely touched memory (receive and
// completion buffers) is better left on normal pages. A hint: refusal is
// ignored.
func AdviseHuge(b []byte) {
	if len(b) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + HugePageSize - 1) &^ (HugePageSize - 1)
	hi := (start + uintptr(len(b))) &^ (HugePageSize - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], madvHugepage)
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
