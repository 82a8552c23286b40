package nvme

import "testing"

// TestFeatures: Get Features opcode 0Ah, Set Features 09h; CDW10 FID bits
// 7:0, SEL bits 10:8, SV bit 31; CDW11 feature specific.
func TestFeatures(t *testing.T) {
	var s SQE
	s.SetGetFeatures(FeatNumQueues, NumQueuesValue(4, 8))
	w := make([]byte, 64)
	w[0] = 0x0A
	w[40] = 0x07
	put32(w, 44, 0x00070003) // NCQR 7 in 31:16, NSQR 3 in 15:0 (0's based)
	checkBytes(t, "Get Features", s[:], w)

	s.SetSetFeatures(FeatKeepAliveTimer, 120000)
	w = make([]byte, 64)
	w[0] = 0x09
	w[40] = 0x0F
	put32(w, 44, 120000)
	checkBytes(t, "Set Features", s[:], w)

	s.SetCDW(10, FeatSV|FeatSelSupported<<8|FeatHostID)
	f := FeaturesCmd{&s}
	if f.FID() != 0x81 || f.SEL() != 3 || !f.SV() {
		t.Errorf("FID %#x SEL %d SV %v", f.FID(), f.SEL(), f.SV())
	}
}

func TestNumQueues(t *testing.T) {
	for _, tc := range []struct {
		sq, cq uint16
		v      uint32
	}{
		{1, 1, 0},
		{0, 0, 0}, // 0 cannot be expressed: treated as 1
		{2, 3, 0x00020001},
		{65535, 65535, 0xFFFEFFFE},
	} {
		if got := NumQueuesValue(tc.sq, tc.cq); got != tc.v {
			t.Errorf("NumQueuesValue(%d,%d) = %#x, want %#x", tc.sq, tc.cq, got, tc.v)
		}
	}
	if sq, cq := ParseNumQueues(0x00070003); sq != 4 || cq != 8 {
		t.Errorf("ParseNumQueues: %d %d", sq, cq)
	}
	if sq, cq := ParseNumQueues(0xFFFFFFFF); sq != 65535 || cq != 65535 {
		t.Errorf("saturation: %d %d", sq, cq)
	}
	for _, n := range []uint16{1, 2, 63, 65535} {
		if sq, cq := ParseNumQueues(NumQueuesValue(n, n)); sq != n || cq != n {
			t.Errorf("round trip %d: %d %d", n, sq, cq)
		}
	}
}

// TestAsyncEvent: completion DW0 type bits 2:0, info bits 15:8, LID 23:16.
func TestAsyncEvent(t *testing.T) {
	v := MakeAsyncEventResult(AsyncEventTypeNotice, AsyncEventNoticeANAChange, LogANA)
	if v != 0x000C0302 {
		t.Fatalf("ANA change result %#x", v)
	}
	if v := MakeAsyncEventResult(AsyncEventTypeNotice, AsyncEventNoticeDiscoveryChange, LogDiscovery); v != 0x0070F002 {
		t.Fatalf("discovery change result %#x", v)
	}
	if v := MakeAsyncEventResult(0xFF, 0, 0); v != 7 {
		t.Fatalf("type not masked: %#x", v)
	}
	typ, info, lid := ParseAsyncEventResult(0xFF0C0302)
	if typ != 2 || info != 3 || lid != 0x0C {
		t.Fatalf("parse: %d %d %#x", typ, info, lid)
	}
	if AECNSAttr != OAESNSAttr || AECANAChange != OAESANAChange || AECDiscoveryChange != OAESDiscoveryChange {
		t.Fatal("AEC and OAES bits must agree")
	}
	if AECANAChange != 1<<11 || AECDiscoveryChange != 1<<31 || AECNSAttr != 1<<8 {
		t.Fatal("AEC bit positions")
	}
}

func TestKeepAliveAER(t *testing.T) {
	var s SQE
	s.SetKeepAlive()
	w := make([]byte, 64)
	w[0] = 0x18
	checkBytes(t, "Keep Alive", s[:], w)
	s.SetAsyncEventRequest()
	w[0] = 0x0C
	checkBytes(t, "AER", s[:], w)
}
