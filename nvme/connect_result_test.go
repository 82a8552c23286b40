package nvme

import (
	"encoding/binary"
	"testing"
)

// TestConnectInvalidParamGolden: DW0 bytes of a completion blaming SUBNQN
// in the Connect data (IPO 256 = 00 01, IATTR 01) and the SQE's SQSIZE
// (IPO 44, IATTR 00).
func TestConnectInvalidParamGolden(t *testing.T) {
	for _, tc := range []struct {
		dw0  [4]byte
		want ConnectInvalidParam
	}{
		{[4]byte{0x00, 0x01, 0x01, 0x00}, ConnectInvalidParam{InData: true, Offset: ConnectDataOffsetSubNQN}},
		{[4]byte{0x00, 0x02, 0x01, 0x00}, ConnectInvalidParam{InData: true, Offset: ConnectDataOffsetHostNQN}},
		{[4]byte{0x2C, 0x00, 0x00, 0x00}, ConnectInvalidParam{InData: false, Offset: 44}},
		{[4]byte{0x10, 0x00, 0xFF, 0xFF}, ConnectInvalidParam{InData: true, Offset: ConnectDataOffsetCNTLID}},
	} {
		dw0 := binary.LittleEndian.Uint32(tc.dw0[:])
		if got := ParseConnectInvalidParam(dw0); got != tc.want {
			t.Errorf("% x: %+v, want %+v", tc.dw0, got, tc.want)
		}
	}
	if got := (ConnectInvalidParam{InData: true, Offset: 256}).DW0(); got != 0x00010100 {
		t.Fatalf("DW0 %#x", got)
	}
}

func FuzzParseConnectInvalidParam(f *testing.F) {
	f.Add(uint32(0x00010100))
	f.Add(uint32(0xFFFFFFFF))
	f.Fuzz(func(t *testing.T, dw0 uint32) {
		p := ParseConnectInvalidParam(dw0)
		if q := ParseConnectInvalidParam(p.DW0()); q != p {
			t.Fatalf("round trip %+v -> %+v", p, q)
		}
		if p.DW0() != dw0&0x1FFFF {
			t.Fatalf("DW0 %#x from %#x", p.DW0(), dw0)
		}
	})
}
