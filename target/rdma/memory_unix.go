//go:build unix

package rdma

import "syscall"

// allocRegion returns n bytes of zeroed memory outside the Go heap
// (anonymous mapping), as providers that hand memory to hardware require.
func allocRegion(n int) ([]byte, error) {
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// freeRegion releases memory from allocRegion. The caller guarantees no
// work request can still access it.
func freeRegion(b []byte) error { return syscall.Munmap(b) }
