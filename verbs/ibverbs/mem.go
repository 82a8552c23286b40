//go:build ibverbs

package ibverbs

import "unsafe"

// addrOf is the address of b[0]. The caller guarantees b is outside the Go
// heap or otherwise pinned for as long as the hardware may access it (see
// the package doc).
func addrOf(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
