package nvme

import (
	"errors"
	"strings"
	"testing"
)

// TestSetConnect: NVMe-oF §3.3 Figure 19: opcode 7Fh, FCTYPE 01h at byte
// 4, RECFMT bytes 40-41, QID 42-43, SQSIZE 44-45, CATTR 46, KATO 48-51.
func TestSetConnect(t *testing.T) {
	var s SQE
	s.SetConnect(3, 127, 0x04, 120000)
	want := make([]byte, 64)
	want[0] = 0x7F
	want[4] = 0x01
	put16(want, 42, 3)
	put16(want, 44, 127)
	want[46] = 0x04
	put32(want, 48, 120000)
	checkBytes(t, "Connect SQE", s[:], want)
	c := ConnectCmd{&s}
	if c.Recfmt() != 0 || c.QID() != 3 || c.SQSize() != 127 || c.CATTR() != 4 || c.KATO() != 120000 {
		t.Errorf("ConnectCmd getters: %d %d %d %d %d", c.Recfmt(), c.QID(), c.SQSize(), c.CATTR(), c.KATO())
	}
}

// TestConnectData: HOSTID at 0 (16 bytes), CNTLID at 16, SUBNQN at 256,
// HOSTNQN at 512 (256 bytes each, NUL padded), the rest reserved (Figure 20).
func TestConnectData(t *testing.T) {
	d := ConnectData{
		HostID:  [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		CNTLID:  DynamicCNTLID,
		SubNQN:  "nqn.2024-01.io.rdmablk:vol1",
		HostNQN: HostNQNFromUUID([16]byte{0xAA}),
	}
	b := filled(ConnectDataSize+8, 0xEE)
	if err := d.Marshal(b); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, ConnectDataSize+8)
	copy(want[0:16], d.HostID[:])
	want[16], want[17] = 0xFF, 0xFF
	putStr(want, 256, 256, d.SubNQN, 0)
	putStr(want, 512, 256, d.HostNQN, 0)
	copy(want[ConnectDataSize:], filled(8, 0xEE)) // beyond the structure: untouched
	checkBytes(t, "connect data", b, want)

	got, err := ParseConnectData(b)
	if err != nil || got != d {
		t.Fatalf("round trip: %+v %v", got, err)
	}

	if _, err := ParseConnectData(b[:ConnectDataSize-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short parse: %v", err)
	}
	if err := d.Marshal(make([]byte, ConnectDataSize-1)); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
	bad := d
	bad.HostNQN = strings.Repeat("x", MaxNQNLength+1)
	if err := bad.Marshal(b); !errors.Is(err, ErrBadNQN) {
		t.Errorf("long NQN: %v", err)
	}
	// An NQN field with no NUL terminator.
	copy(b[512:768], filled(256, 'a'))
	if _, err := ParseConnectData(b); !errors.Is(err, ErrBadNQN) {
		t.Errorf("unterminated NQN: %v", err)
	}
}

// TestProperty: ATTRIB byte 40 (size bits 2:0: 0 = 4 bytes, 1 = 8 bytes),
// OFST bytes 44-47, VALUE bytes 48-55 (NVMe-oF §3.4-3.5).
func TestProperty(t *testing.T) {
	var s SQE
	s.SetPropertyGet(PropCAP, true)
	want := make([]byte, 64)
	want[0], want[4], want[40] = 0x7F, 0x04, 0x01
	checkBytes(t, "Property Get", s[:], want)
	p := PropertyCmd{&s}
	if !p.Size8() || p.Offset() != PropCAP || p.Attrib() != 1 {
		t.Error("Property Get getters")
	}

	s.SetPropertySet(PropCC, false, 0x00460001)
	want = make([]byte, 64)
	want[0], want[4], want[40] = 0x7F, 0x00, 0x00
	put32(want, 44, 0x14)
	put64(want, 48, 0x00460001)
	checkBytes(t, "Property Set", s[:], want)
	if p.Size8() || p.Offset() != 0x14 || p.Value() != 0x00460001 {
		t.Error("Property Set getters")
	}
}

func TestRegisters(t *testing.T) {
	// MQES 0's based bits 15:0, CQR bit 16, TO bits 31:24, CSS NVM bit 37,
	// MPSMIN 51:48, MPSMAX 55:52.
	got := MakeCAP(127, 30, 0, 4)
	want := uint64(127) | 1<<16 | 30<<24 | 1<<37 | 0<<48 | 4<<52
	if got != want {
		t.Fatalf("MakeCAP = %#x, want %#x", got, want)
	}
	if CCEN != 1 || CCSHNNormal != 1<<14 || CSTSRDY != 1 || CSTSSHSTComplete != 2<<2 {
		t.Fatal("CC/CSTS bits")
	}
}

func TestPropertySet8(t *testing.T) {
	var s SQE
	s.SetPropertySet(PropCAP, true, 0x1122334455667788)
	if s[40] != 1 || (PropertyCmd{&s}).Value() != 0x1122334455667788 {
		t.Fatalf("8-byte Property Set: % x", s[40:56])
	}
}

// TestOpcodeDirection: opcode bits 1:0 give the data direction.
func TestOpcodeDirection(t *testing.T) {
	for _, tc := range []struct {
		op   uint8
		want DataDirection
	}{
		{IOFlush, DirNone}, {IOWrite, DirHostToCtrl}, {IORead, DirCtrlToHost},
		{AdminIdentify, DirCtrlToHost}, {AdminSetFeatures, DirHostToCtrl}, {AdminGetLogPage, DirCtrlToHost},
		{AdminKeepAlive, DirNone}, {IODatasetMgmt, DirHostToCtrl}, {FabricsConnect, DirHostToCtrl},
		{FabricsPropertyGet, DirNone}, {0x03, DirBidirectional},
	} {
		op, want := tc.op, tc.want
		if got := OpcodeDirection(op); got != want {
			t.Errorf("OpcodeDirection(%#x) = %d, want %d", op, got, want)
		}
	}
}
