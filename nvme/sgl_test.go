package nvme

import "testing"

// TestSGLKeyed: keyed data block (type 4): address bytes 0-7, 24-bit length
// bytes 8-10, key bytes 11-14, byte 15 = type<<4 | subtype (NVMe base spec
// §4.3.2.3 Figure 117).
func TestSGLKeyed(t *testing.T) {
	var d SGL
	d.SetKeyed(0x1122334455667788, 0xABCDEF, 0xDEADBEEF, SGLSubtypeInvalidate)
	want := []byte{
		0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
		0xEF, 0xCD, 0xAB,
		0xEF, 0xBE, 0xAD, 0xDE,
		0x4F,
	}
	checkBytes(t, "keyed SGL", d[:], want)
	if !d.IsKeyed() || d.IsInCapsule() || d.Type() != SGLTypeKeyedDataBlock || d.Subtype() != SGLSubtypeInvalidate {
		t.Error("type/subtype")
	}
	if d.Address() != 0x1122334455667788 || d.Length() != 0xABCDEF || d.Key() != 0xDEADBEEF {
		t.Errorf("addr %#x len %#x key %#x", d.Address(), d.Length(), d.Key())
	}
	// The length field is 24 bits: the key byte 11 is not part of it.
	d.SetKeyed(0, MaxKeyedSGLLength, 0xFF, SGLSubtypeAddress)
	if d.Length() != MaxKeyedSGLLength || d[11] != 0xFF {
		t.Errorf("max length: %#x", d.Length())
	}
	// Documented truncation of an over-long length.
	d.SetKeyed(0, 1<<24|5, 7, SGLSubtypeAddress)
	if d.Length() != 5 || d.Key() != 7 {
		t.Errorf("truncated length %#x key %#x", d.Length(), d.Key())
	}
}

// TestSGLInCapsule: data block (type 0) with offset subtype 1: offset in
// bytes 0-7, 32-bit length bytes 8-11, reserved 12-14 (NVMe-oF §2.3.1).
func TestSGLInCapsule(t *testing.T) {
	var d SGL
	copy(d[:], filled(16, 0xEE))
	d.SetDataBlock(0x10, 0x1000, SGLSubtypeOffset)
	want := []byte{
		0x10, 0, 0, 0, 0, 0, 0, 0,
		0x00, 0x10, 0x00, 0x00,
		0, 0, 0,
		0x01,
	}
	checkBytes(t, "in-capsule SGL", d[:], want)
	if !d.IsInCapsule() || d.IsKeyed() || d.Length() != 0x1000 || d.Address() != 0x10 {
		t.Error("in-capsule getters")
	}
	// A 32-bit length above 24 bits is kept for data blocks.
	d.SetDataBlock(0, 0x01000000, SGLSubtypeOffset)
	if d.Length() != 0x01000000 {
		t.Errorf("data block length %#x", d.Length())
	}
}

func TestSGLNull(t *testing.T) {
	var d SGL
	copy(d[:], filled(16, 0xEE))
	d.SetNull()
	want := make([]byte, 16)
	want[15] = 0x40
	checkBytes(t, "null SGL", d[:], want)
}

func TestInCapsuleSpan(t *testing.T) {
	for _, tc := range []struct {
		off    uint64
		length uint32
		icd    int
		ok     bool
		o, n   int
	}{
		{0x10, 0x1000, 0x1010, true, 0x10, 0x1000},
		{0x10, 0x1000, 0x100F, false, 0, 0},
		{0, 0, 0, true, 0, 0},
		{0, 1, 0, false, 0, 0},
		{1, 0, 0, false, 0, 0},
		{0, 8192, 8192, true, 0, 8192},
		{0xFFFFFFFFFFFFFFF0, 0x20, 1 << 20, false, 0, 0}, // would wrap
		{1 << 63, 0xFFFFFFFF, 1<<62 + 5, false, 0, 0},
		{0, 0, -1, false, 0, 0}, // negative icdLen
		{0, 0, -1 << 62, false, 0, 0},
	} {
		var d SGL
		d.SetDataBlock(tc.off, tc.length, SGLSubtypeOffset)
		o, n, ok := d.InCapsuleSpan(tc.icd)
		if ok != tc.ok || o != tc.o || n != tc.n {
			t.Errorf("span(off %#x len %#x icd %d) = %d,%d,%v want %d,%d,%v",
				tc.off, tc.length, tc.icd, o, n, ok, tc.o, tc.n, tc.ok)
		}
	}
}
