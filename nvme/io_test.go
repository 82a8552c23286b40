package nvme

import "testing"

// TestSetRW: SLBA CDW10-11 (bytes 40-47), CDW12 NLB 0's based bits 15:0,
// DEAC bit 25, FUA bit 30 (NVM command set §3.2.4, §3.2.6).
func TestSetRW(t *testing.T) {
	var s SQE
	s.SetRW(IORead, 1, 0x0102030405060708, 8, RWFUA)
	want := make([]byte, 64)
	want[0] = 0x02
	put32(want, 4, 1)
	put64(want, 40, 0x0102030405060708)
	want[48], want[51] = 0x07, 0x40 // NLB 7 (0's based), FUA bit 30
	checkBytes(t, "Read SQE", s[:], want)
	c := RWCmd{&s}
	if c.SLBA() != 0x0102030405060708 || c.NLB() != 8 || !c.FUA() || c.Deallocate() {
		t.Error("RWCmd getters")
	}
	s.SetRW(IOWriteZeroes, 1, 0, 65536, RWDeallocate)
	if s.CDW12() != 0xFFFF|1<<25 || c.NLB() != 65536 || !c.Deallocate() || c.FUA() {
		t.Errorf("write zeroes CDW12 %#x", s.CDW12())
	}
}

func TestSetFlushDSM(t *testing.T) {
	var s SQE
	s.SetFlush(0xFFFFFFFF)
	want := make([]byte, 64)
	put32(want, 4, 0xFFFFFFFF)
	checkBytes(t, "Flush", s[:], want)

	// DSM: CDW10 NR bits 7:0 (0's based), CDW11 attributes (AD bit 2).
	s.SetDSM(5, 256, DSMAttrDeallocate)
	want = make([]byte, 64)
	want[0] = 0x09
	put32(want, 4, 5)
	want[40] = 0xFF
	want[44] = 0x04
	checkBytes(t, "DSM", s[:], want)
	d := DSMCmd{&s}
	if d.NR() != 256 || d.Attributes() != DSMAttrDeallocate {
		t.Errorf("DSMCmd NR %d attr %#x", d.NR(), d.Attributes())
	}
	s.SetDSM(5, 1, 0)
	if d.NR() != 1 || s[40] != 0 {
		t.Error("DSM nr 1")
	}
}

// TestDSMRange: context attributes +0, NLB +4, SLBA +8 (NVM command set
// Figure 40).
func TestDSMRange(t *testing.T) {
	b := filled(48, 0xEE)
	r := DSMRange{ContextAttributes: 0x01020304, NLB: 0x100, SLBA: 0x1122334455667788}
	if !PutDSMRange(b, 1, r) {
		t.Fatal("PutDSMRange(1)")
	}
	want := filled(48, 0xEE)
	put32(want, 16, 0x01020304)
	put32(want, 20, 0x100)
	put64(want, 24, 0x1122334455667788)
	checkBytes(t, "DSM range", b, want)
	got, ok := ParseDSMRange(b, 1)
	if !ok || got != r {
		t.Fatalf("round trip %+v %v", got, ok)
	}
	for _, i := range []int{-1, 3, 1 << 60, 1<<59 + 1, int(^uint(0) >> 1)} {
		if _, ok := ParseDSMRange(b, i); ok {
			t.Errorf("ParseDSMRange(%d) ok", i)
		}
		if PutDSMRange(b, i, r) {
			t.Errorf("PutDSMRange(%d) ok", i)
		}
	}
	checkBytes(t, "after refused puts", b, want)
	if _, ok := ParseDSMRange(b[:47], 2); ok {
		t.Error("partial range accepted")
	}
}
