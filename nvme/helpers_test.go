package nvme

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// Test helpers that write little-endian values at spec offsets into the
// expected ("golden") buffers. They use encoding/binary directly, not the
// package code under test.

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }
func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

// putStr writes s at off followed by pad bytes up to n bytes in total.
func putStr(b []byte, off, n int, s string, pad byte) {
	copy(b[off:off+n], s)
	for i := off + len(s); i < off+n; i++ {
		b[i] = pad
	}
}

// filled returns n bytes of v, to prove encoders overwrite stale data.
func filled(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }

// checkBytes fails with the first few differing offsets.
func checkBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	n := 0
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: byte %d = %#02x, want %#02x", what, i, got[i], want[i])
			if n++; n == 8 {
				t.Fatalf("%s: too many differences", what)
			}
		}
	}
}
