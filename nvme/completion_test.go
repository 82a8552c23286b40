package nvme

import "testing"

// TestCQELayout: DW0 bytes 0-3, DW1 4-7, SQHD 8-9, SQID 10-11, CID 12-13,
// bytes 14-15: phase tag bit 0, status field bits 15:1 (NVMe base spec
// §4.6 Figure 92-93).
func TestCQELayout(t *testing.T) {
	var c CQE
	c.SetDW0(0x44332211)
	c.SetDW1(0x88776655)
	c.SetSQHD(0x0A09)
	c.SetSQID(0x0C0B)
	c.SetCID(0x0E0D)
	c.SetStatus(StatusInvalidField.WithDNR())
	want := []byte{
		0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88,
		0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E,
		0x04, 0x80, // (0x4002 << 1): SC 02 in bits 8:1, DNR in bit 15
	}
	checkBytes(t, "CQE", c[:], want)
	if c.DW0() != 0x44332211 || c.DW1() != 0x88776655 || c.Result64() != 0x8877665544332211 {
		t.Error("DW0/DW1/Result64")
	}
	if c.SQHD() != 0x0A09 || c.SQID() != 0x0C0B || c.CID() != 0x0E0D {
		t.Error("SQHD/SQID/CID")
	}
	if c.Status() != StatusInvalidField|StatusDNR || c.Phase() {
		t.Errorf("Status %#x phase %v", uint16(c.Status()), c.Phase())
	}
	c.SetResult64(0x0102030405060708)
	if c[0] != 0x08 || c[7] != 0x01 {
		t.Errorf("SetResult64: % x", c[:8])
	}
	c.Reset()
	if c != (CQE{}) {
		t.Error("Reset")
	}
}

// TestCQEStatusBits checks each status sub-field lands on its wire bit.
func TestCQEStatusBits(t *testing.T) {
	for _, tc := range []struct {
		s      Status
		b14    byte
		b15    byte
		phase  bool
		reason string
	}{
		{StatusSuccess, 0x00, 0x00, false, "success"},
		{StatusSuccess, 0x01, 0x00, true, "phase bit 0 alone"},
		{StatusLBAOutOfRange, 0x00, 0x01, false, "SC 0x80 → wire bit 8"},
		{StatusConnectInvalidHost, 0x08, 0x03, false, "SCT 1 SC 0x84 → 0x308"},
		{StatusANAInaccessible, 0x04, 0x06, false, "SCT 3 SC 0x02 → 0x604"},
		{StatusMore, 0x00, 0x40, false, "More is wire bit 14"},
		{StatusDNR, 0x00, 0x80, false, "DNR is wire bit 15"},
		{Status(3 << 11), 0x00, 0x30, false, "CRD bits 12:11 → wire 13:12"},
	} {
		var c CQE
		if tc.phase {
			c[14] = 1
		}
		c.SetStatus(tc.s)
		if c[14] != tc.b14 || c[15] != tc.b15 {
			t.Errorf("%s: bytes %#02x %#02x, want %#02x %#02x", tc.reason, c[14], c[15], tc.b14, tc.b15)
		}
		if c.Status() != tc.s || c.Phase() != tc.phase {
			t.Errorf("%s: read back %#x phase %v", tc.reason, uint16(c.Status()), c.Phase())
		}
	}
}

func TestLoadCQE(t *testing.T) {
	b := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17}
	c, ok := LoadCQE(b)
	if !ok || c.CID() != 0x0E0D || c[15] != 16 {
		t.Fatalf("LoadCQE: %v % x", ok, c)
	}
	if _, ok := LoadCQE(b[:15]); ok {
		t.Fatal("LoadCQE(15 bytes) succeeded")
	}
}
