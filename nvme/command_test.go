package nvme

import (
	"testing"
)

// TestSQEFieldOffsets: CDW0 opcode byte 0, flags byte 1 (PSDT bits 7:6,
// FUSE 1:0), CID bytes 2-3, NSID bytes 4-7, MPTR bytes 16-23, DPTR/SGL1
// bytes 24-39, CDW10..15 bytes 40..63 (NVMe base spec §4.2 Figure 88).
func TestSQEFieldOffsets(t *testing.T) {
	var s SQE
	s.SetOpcode(0x02)
	s.SetFlags(0x01) // FUSE = 1
	s.SetPSDT(PSDTSGL)
	s.SetCID(0xBEEF)
	s.SetNSID(0x01020304)
	s.SetCDW(4, 0x11111111)
	s.SetCDW(10, 0xA3A2A1A0)
	s.SetCDW(15, 0xF3F2F1F0)
	s.SGL1().SetKeyed(0x0807060504030201, 0x0C0B0A, 0x100F0E0D, SGLSubtypeAddress)

	want := make([]byte, 64)
	want[0] = 0x02
	want[1] = 0x41 // PSDT 01b in bits 7:6, FUSE 01b
	want[2], want[3] = 0xEF, 0xBE
	want[4], want[5], want[6], want[7] = 0x04, 0x03, 0x02, 0x01
	put32(want, 16, 0x11111111) // CDW4 = MPTR low
	for i := 0; i < 8; i++ {
		want[24+i] = byte(i + 1) // SGL address, bytes 0-7
	}
	for i := 0; i < 7; i++ {
		want[32+i] = byte(0x0A + i) // 24-bit length at 8-10, key at 11-14
	}
	want[39] = 0x40 // keyed data block, subtype 0
	want[40], want[41], want[42], want[43] = 0xA0, 0xA1, 0xA2, 0xA3
	want[60], want[61], want[62], want[63] = 0xF0, 0xF1, 0xF2, 0xF3
	checkBytes(t, "SQE", s[:], want)

	if s.Opcode() != 0x02 || s.CID() != 0xBEEF || s.NSID() != 0x01020304 ||
		s.PSDT() != PSDTSGL || s.FUSE() != 1 || s.Flags() != 0x41 {
		t.Errorf("getters: op %#x cid %#x nsid %#x psdt %d fuse %d", s.Opcode(), s.CID(), s.NSID(), s.PSDT(), s.FUSE())
	}
	if s.MPTR() != 0x11111111 {
		t.Errorf("MPTR = %#x", s.MPTR())
	}
	if s.CDW10() != 0xA3A2A1A0 || s.CDW15() != 0xF3F2F1F0 || s.CDW11() != 0 {
		t.Errorf("CDW10 %#x CDW15 %#x CDW11 %#x", s.CDW10(), s.CDW15(), s.CDW11())
	}
	if s.CDW12() != 0 || s.CDW13() != 0 || s.CDW14() != 0 {
		t.Error("CDW12-14 not zero")
	}
	// SetPSDT keeps the other flag bits.
	s.SetPSDT(PSDTSGLSeg)
	if s[1] != 0x81 {
		t.Errorf("SetPSDT(2): flags %#x, want 0x81", s[1])
	}
}

func TestSQECDWOutOfRange(t *testing.T) {
	var s SQE
	s.SetCDW(-1, 0xFFFFFFFF)
	s.SetCDW(16, 0xFFFFFFFF)
	if s != (SQE{}) {
		t.Fatal("out-of-range SetCDW wrote")
	}
	s.SetCDW(0, 0x04030201)
	if s.CDW(0) != 0x04030201 || s.CDW(-1) != 0 || s.CDW(16) != 0 {
		t.Fatal("CDW range handling")
	}
}

func TestLoadSQE(t *testing.T) {
	b := make([]byte, 100)
	for i := range b {
		b[i] = byte(i)
	}
	s, ok := LoadSQE(b)
	if !ok {
		t.Fatal("LoadSQE(100 bytes) failed")
	}
	checkBytes(t, "LoadSQE", s[:], b[:64])
	b[0] = 0xFF // a copy, not a view
	if s[0] != 0 {
		t.Fatal("LoadSQE aliases its input")
	}
	if _, ok := LoadSQE(b[:63]); ok {
		t.Fatal("LoadSQE(63 bytes) succeeded")
	}
}

func TestFabricsHeader(t *testing.T) {
	var s SQE
	s.SetOpcode(OpFabrics)
	s.SetFCType(FabricsPropertyGet)
	if !s.IsFabrics() || s.FCType() != 0x04 || s[0] != 0x7F || s[4] != 0x04 {
		t.Fatalf("fabrics header: %x", s[:8])
	}
	s.SetOpcode(AdminIdentify)
	if s.IsFabrics() {
		t.Fatal("Identify reported as fabrics")
	}
}

// TestSetterPreservesCIDFlagsSGL: every setter zeroes all other bytes,
// including reserved ones, and keeps flags, CID and SGL1.
func TestSetterPreservesCIDFlagsSGL(t *testing.T) {
	setters := map[string]func(*SQE){
		"SetConnect":           func(s *SQE) { s.SetConnect(1, 2, 3, 4) },
		"SetPropertyGet":       func(s *SQE) { s.SetPropertyGet(PropCSTS, false) },
		"SetPropertySet":       func(s *SQE) { s.SetPropertySet(PropCC, false, 1) },
		"SetRW":                func(s *SQE) { s.SetRW(IOWrite, 1, 2, 3, 0) },
		"SetIdentify":          func(s *SQE) { s.SetIdentify(CNSController, 0) },
		"SetGetFeatures":       func(s *SQE) { s.SetGetFeatures(FeatNumQueues, 0) },
		"SetSetFeatures":       func(s *SQE) { s.SetSetFeatures(FeatKeepAliveTimer, 0) },
		"SetGetLogPage":        func(s *SQE) { s.SetGetLogPage(LogDiscovery, 0, 1024, 0) },
		"SetKeepAlive":         func(s *SQE) { s.SetKeepAlive() },
		"SetAsyncEventRequest": func(s *SQE) { s.SetAsyncEventRequest() },
		"SetFlush":             func(s *SQE) { s.SetFlush(1) },
		"SetDSM":               func(s *SQE) { s.SetDSM(1, 1, DSMAttrDeallocate) },
	}
	for name, set := range setters {
		var stale, fresh SQE
		copy(stale[:], filled(64, 0xEE))
		set(&stale)
		set(&fresh)
		// Bytes 1-3 (flags, CID) and 24-39 (SGL1) keep their stale value.
		for i := range stale {
			keep := i >= 1 && i <= 3 || i >= 24 && i <= 39
			switch {
			case keep && stale[i] != 0xEE:
				t.Errorf("%s: byte %d = %#x, want preserved 0xEE", name, i, stale[i])
			case !keep && stale[i] != fresh[i]:
				t.Errorf("%s: byte %d = %#x, stale data left (fresh %#x)", name, i, stale[i], fresh[i])
			}
		}
	}
}
