package nbsys

import (
	"syscall"
	"testing"
	"unsafe"
)

// TestAdvance: written bytes leave the front of the iovecs, whole ones
// dropped, a partly written one moved on.
func TestAdvance(t *testing.T) {
	a, b, c := make([]byte, 4), make([]byte, 8), make([]byte, 2)
	mk := func() []syscall.Iovec {
		var iov []syscall.Iovec
		for _, p := range [][]byte{a, b, c} {
			v := syscall.Iovec{Base: &p[0]}
			v.SetLen(len(p))
			iov = append(iov, v)
		}
		return iov
	}
	for _, tc := range []struct {
		n, left int
		base    *byte
		first   int
	}{
		{0, 3, &a[0], 4}, {3, 3, &a[3], 1}, {4, 2, &b[0], 8}, {9, 2, &b[5], 3}, {12, 1, &c[0], 2}, {14, 0, nil, 0},
	} {
		rest := Advance(mk(), tc.n)
		if len(rest) != tc.left {
			t.Fatalf("n %d: %d iovecs left, want %d", tc.n, len(rest), tc.left)
		}
		if tc.left > 0 && (rest[0].Base != tc.base || int(rest[0].Len) != tc.first) {
			t.Fatalf("n %d: first iovec at +%d len %d, want len %d", tc.n,
				uintptr(unsafe.Pointer(rest[0].Base))-uintptr(unsafe.Pointer(tc.base)), rest[0].Len, tc.first)
		}
	}
}
