package nvme

import (
	"errors"
	"reflect"
	"testing"
)

func sampleGroups() []ANAGroupDescriptor {
	return []ANAGroupDescriptor{
		{GroupID: 1, ChangeCount: 10, State: ANAStateOptimized, NSIDs: []uint32{1, 2}},
		{GroupID: 2, ChangeCount: 11, State: ANAStateInaccessible, NSIDs: nil},
		{GroupID: 3, ChangeCount: 12, State: ANAStateChange, NSIDs: []uint32{7}},
	}
}

// TestANALogGolden: header CHGCNT 0, NGRPS 8, 6 reserved; descriptor
// ANAGRPID +0, NNSIDS +4, CHGCNT +8, state +16 bits 3:0, 15 reserved, NSIDs
// from +32 (NVMe base spec 2.0 Figures 220-221).
func TestANALogGolden(t *testing.T) {
	g := sampleGroups()
	size := ANALogSize(g, false)
	if size != 16+3*32+3*4 {
		t.Fatalf("ANALogSize %d", size)
	}
	b := filled(size+8, 0xEE)
	n, err := MarshalANALog(b, 99, g, false)
	if err != nil || n != size {
		t.Fatal(n, err)
	}
	w := make([]byte, size+8) // the tail of b is zeroed too
	put64(w, 0, 99)
	put16(w, 8, 3)
	o := 16
	put32(w, o, 1)
	put32(w, o+4, 2)
	put64(w, o+8, 10)
	w[o+16] = 1
	put32(w, o+32, 1)
	put32(w, o+36, 2)
	o += 40
	put32(w, o, 2)
	put64(w, o+8, 11)
	w[o+16] = 3
	o += 32
	put32(w, o, 3)
	put32(w, o+4, 1)
	put64(w, o+8, 12)
	w[o+16] = 0xF
	put32(w, o+32, 7)
	checkBytes(t, "ANA log", b, w)

	chg, got, err := ParseANALog(b)
	if err != nil || chg != 99 || !reflect.DeepEqual(got, g) {
		t.Fatalf("round trip: %d %+v %v", chg, got, err)
	}
}

func TestANALogRGO(t *testing.T) {
	g := sampleGroups()
	size := ANALogSize(g, true)
	if size != 16+3*32 {
		t.Fatalf("RGO size %d", size)
	}
	b := make([]byte, size)
	if n, err := MarshalANALog(b, 1, g, true); err != nil || n != size {
		t.Fatal(n, err)
	}
	if b[16+4] != 0 || b[16+32] != 2 { // NNSIDS 0; next descriptor right after
		t.Errorf("RGO layout: % x", b[16:56])
	}
	_, got, err := ParseANALog(b)
	if err != nil || len(got) != 3 || got[0].NSIDs != nil || got[2].State != ANAStateChange {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestANALogErrors(t *testing.T) {
	g := sampleGroups()
	b := filled(ANALogSize(g, false)-1, 0xEE)
	if _, err := MarshalANALog(b, 1, g, false); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	checkBytes(t, "unchanged", b, filled(len(b), 0xEE))
	if _, err := MarshalANALog(make([]byte, 1<<22), 1, make([]ANAGroupDescriptor, ANAMaxGroups+1), true); !errors.Is(err, ErrTooMany) {
		t.Errorf("too many groups: %v", err)
	}
	if _, _, err := ParseANALog(make([]byte, 15)); !errors.Is(err, ErrShort) {
		t.Errorf("short header: %v", err)
	}
	full := make([]byte, ANALogSize(g, false))
	if _, err := MarshalANALog(full, 1, g, false); err != nil {
		t.Fatal(err)
	}
	// Truncated: fewer bytes than the descriptors announce.
	if _, got, err := ParseANALog(full[:len(full)-1]); !errors.Is(err, ErrShort) || len(got) != 2 {
		t.Errorf("truncated: %d %v", len(got), err)
	}
	// A hostile NNSIDS must not allocate: it exceeds the buffer.
	put32(full, 16+4, 0xFFFFFFFF)
	if _, _, err := ParseANALog(full); !errors.Is(err, ErrShort) {
		t.Errorf("hostile NNSIDS: %v", err)
	}
	// NGRPS larger than the descriptors present.
	hdr := make([]byte, 16+32)
	put16(hdr, 8, 2)
	if _, got, err := ParseANALog(hdr); !errors.Is(err, ErrShort) || len(got) != 1 {
		t.Errorf("NGRPS overrun: %d %v", len(got), err)
	}
	// The state keeps only bits 3:0.
	one := []ANAGroupDescriptor{{GroupID: 1, State: 0xF1}}
	small := make([]byte, ANALogSize(one, false))
	MarshalANALog(small, 0, one, false)
	if small[32] != 1 {
		t.Errorf("state byte %#x", small[32])
	}
}

// TestANALogHeaderGolden: CHGCNT at bytes 0-7 and NGRPS at 8-9, little
// endian (Figure 220); the reserved bytes 10-15 are ignored.
func TestANALogHeaderGolden(t *testing.T) {
	b := []byte{
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, // CHGCNT
		0x03, 0x00, // NGRPS
		0xAA, 0xAA, 0xAA, 0xAA, 0xAA, 0xAA, // reserved
	}
	h, err := ParseANALogHeader(b)
	if err != nil || h.ChangeCount != 0x0102030405060708 || h.NumGroups != 3 {
		t.Fatalf("%+v %v", h, err)
	}
	if got := h.DescriptorsSize(); got != 16+3*32 {
		t.Fatalf("DescriptorsSize %d", got)
	}
	if _, err := ParseANALogHeader(b[:15]); err != ErrShort {
		t.Fatalf("short header: %v", err)
	}
}
