package nvme

import (
	"errors"
	"strings"
	"testing"
)

func sampleEntries() []DiscoveryLogEntry {
	return []DiscoveryLogEntry{
		{
			TrType: TrTypeRDMA, AdrFam: AdrFamIPv4, SubType: SubTypeNVM,
			TReq: TReqSecureNotSpecified | TReqDisableSQFlow, PortID: 1, CNTLID: DynamicCNTLID,
			ASQSZ: 32, EFlags: EFlagsEPCSD, TrSvcID: "4420", SubNQN: "nqn.2024-01.io.rdmablk:vol1",
			TrAddr: "192.168.1.10",
			TSAS:   RDMATSAS(RDMAQPTypeConnected, RDMAPrTypeRoCEv2, RDMACMSRDMACM, 0xFFFF),
		},
		{
			TrType: TrTypeTCP, AdrFam: AdrFamIPv6, SubType: SubTypeCurrentDiscovery,
			PortID: 2, CNTLID: DynamicCNTLID, ASQSZ: 32, TrSvcID: "8009",
			SubNQN: DiscoveryNQN, TrAddr: "fe80::1",
		},
	}
}

// TestRDMATSAS: RDMA_QPTYPE at 0, RDMA_PRTYPE at 1, RDMA_CMS at 2, 5
// reserved, RDMA_PKEY at 8 (NVMe-oF 1.1 Figure 50).
func TestRDMATSAS(t *testing.T) {
	ts := RDMATSAS(RDMAQPTypeConnected, RDMAPrTypeRoCEv2, RDMACMSRDMACM, 0x1234)
	w := make([]byte, TSASSize)
	w[0], w[1], w[2] = 1, 4, 1
	put16(w, 8, 0x1234)
	checkBytes(t, "RDMA TSAS", ts[:], w)
	q, p, c, k := ParseRDMATSAS(ts)
	if q != 1 || p != 4 || c != 1 || k != 0x1234 {
		t.Fatal("ParseRDMATSAS")
	}
}

// TestDiscoveryLogGolden: header GENCTR 0, NUMREC 8, RECFMT 16; entries at
// 1024 + 1024i with TRTYPE 0, ADRFAM 1, SUBTYPE 2, TREQ 3, PORTID 4, CNTLID
// 6, ASQSZ 8, EFLAGS 10, TRSVCID 32 (32 B), SUBNQN +256, TRADDR +512,
// TSAS +768.
func TestDiscoveryLogGolden(t *testing.T) {
	e := sampleEntries()
	size := DiscoveryLogSize(len(e))
	b := filled(size+16, 0xEE)
	if err := MarshalDiscoveryLog(b, 7, e); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, size+16)
	put64(w, 0, 7) // GENCTR
	put64(w, 8, 2) // NUMREC
	// entry 0 at 1024
	o := 1024
	w[o+0], w[o+1], w[o+2], w[o+3] = 1, 1, 2, 0x04
	put16(w, o+4, 1)
	put16(w, o+6, 0xFFFF)
	put16(w, o+8, 32)
	put16(w, o+10, 2)
	putStr(w, o+32, 32, "4420", ' ')
	putStr(w, o+256, 256, "nqn.2024-01.io.rdmablk:vol1", 0)
	putStr(w, o+512, 256, "192.168.1.10", ' ')
	w[o+768], w[o+769], w[o+770] = 1, 4, 1
	put16(w, o+776, 0xFFFF)
	// entry 1 at 2048
	o = 2048
	w[o+0], w[o+1], w[o+2] = 3, 2, 3
	put16(w, o+4, 2)
	put16(w, o+6, 0xFFFF)
	put16(w, o+8, 32)
	putStr(w, o+32, 32, "8009", ' ')
	putStr(w, o+256, 256, DiscoveryNQN, 0)
	putStr(w, o+512, 256, "fe80::1", ' ')
	copy(w[size:], filled(16, 0xEE)) // beyond the log: untouched
	checkBytes(t, "discovery log", b, w)

	h, got, err := ParseDiscoveryLog(b)
	if err != nil || h != (DiscoveryLogHeader{GenCtr: 7, NumRec: 2}) || len(got) != 2 {
		t.Fatalf("parse: %+v %d %v", h, len(got), err)
	}
	for i := range e {
		if got[i] != e[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], e[i])
		}
	}
}

func TestDiscoveryLogPartial(t *testing.T) {
	e := sampleEntries()
	b := make([]byte, DiscoveryLogSize(len(e)))
	if err := MarshalDiscoveryLog(b, 1, e); err != nil {
		t.Fatal(err)
	}
	// Header-only read: NUMREC tells the host how much to read next.
	h, got, err := ParseDiscoveryLog(b[:1024])
	if err != nil || h.NumRec != 2 || len(got) != 0 {
		t.Errorf("header only: %+v %d %v", h, len(got), err)
	}
	// A truncated second entry is not returned.
	if _, got, err := ParseDiscoveryLog(b[:2048+1023]); err != nil || len(got) != 1 {
		t.Errorf("truncated: %d %v", len(got), err)
	}
	// More bytes than NUMREC announces: only NUMREC entries.
	big := make([]byte, DiscoveryLogSize(4))
	copy(big, b)
	if _, got, err := ParseDiscoveryLog(big); err != nil || len(got) != 2 {
		t.Errorf("oversized buffer: %d %v", len(got), err)
	}
	// A huge NUMREC is bounded by the buffer.
	put64(b, 8, 1<<62)
	if _, got, err := ParseDiscoveryLog(b); err != nil || len(got) != 2 {
		t.Errorf("huge NUMREC: %d %v", len(got), err)
	}
	// Empty log.
	if err := MarshalDiscoveryLog(b[:1024], 9, nil); err != nil {
		t.Fatal(err)
	}
	if h, got, err := ParseDiscoveryLog(b[:1024]); err != nil || h.GenCtr != 9 || h.NumRec != 0 || got != nil {
		t.Errorf("empty: %+v %v", h, err)
	}
}

func TestDiscoveryLogNULPadded(t *testing.T) {
	// Linux nvmet pads TRADDR/TRSVCID with NULs: decoders accept both.
	b := make([]byte, DiscoveryLogSize(1))
	put64(b, 8, 1)
	copy(b[1024+32:], "4420")
	copy(b[1024+512:], "10.0.0.1")
	copy(b[1024+256:], "nqn.2014-08.org.nvmexpress.discovery")
	_, got, err := ParseDiscoveryLog(b)
	if err != nil || len(got) != 1 || got[0].TrSvcID != "4420" || got[0].TrAddr != "10.0.0.1" || got[0].SubNQN != DiscoveryNQN {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestDiscoveryLogErrors(t *testing.T) {
	e := sampleEntries()
	b := filled(DiscoveryLogSize(2), 0xEE)
	if err := MarshalDiscoveryLog(b[:DiscoveryLogSize(2)-1], 1, e); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	for name, mod := range map[string]func(*DiscoveryLogEntry){
		"TrSvcID 33 bytes": func(x *DiscoveryLogEntry) { x.TrSvcID = strings.Repeat("1", 33) },
		"TrAddr 257 bytes": func(x *DiscoveryLogEntry) { x.TrAddr = strings.Repeat("a", 257) },
		"NUL in TrAddr":    func(x *DiscoveryLogEntry) { x.TrAddr = "1.2.3.4\x00" },
	} {
		bad := sampleEntries()
		mod(&bad[1])
		if err := MarshalDiscoveryLog(b, 1, bad); !errors.Is(err, ErrTooLong) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := sampleEntries()
	bad[1].SubNQN = strings.Repeat("q", 224)
	if err := MarshalDiscoveryLog(b, 1, bad); !errors.Is(err, ErrBadNQN) {
		t.Errorf("long NQN: %v", err)
	}
	checkBytes(t, "unchanged after errors", b, filled(DiscoveryLogSize(2), 0xEE))
	// Exactly-fitting fields are fine.
	ok := sampleEntries()
	ok[0].TrSvcID, ok[0].TrAddr = strings.Repeat("1", 32), strings.Repeat("a", 256)
	if err := MarshalDiscoveryLog(b, 1, ok); err != nil {
		t.Fatal(err)
	}
	if _, got, err := ParseDiscoveryLog(b); err != nil || got[0] != ok[0] {
		t.Errorf("full-width fields: %v", err)
	}

	if _, _, err := ParseDiscoveryLog(b[:1023]); !errors.Is(err, ErrShort) {
		t.Errorf("short parse: %v", err)
	}
	b[16] = 1
	if _, _, err := ParseDiscoveryLog(b); !errors.Is(err, ErrBadRecfmt) {
		t.Errorf("recfmt: %v", err)
	}
	b[16] = 0
	copy(b[2048+256:2048+512], filled(256, 'x')) // SUBNQN without NUL
	if _, got, err := ParseDiscoveryLog(b); !errors.Is(err, ErrBadNQN) || len(got) != 1 {
		t.Errorf("bad NQN in entry 1: %d %v", len(got), err)
	}
	var one DiscoveryLogEntry
	if err := one.Marshal(b[:1023]); !errors.Is(err, ErrShort) {
		t.Errorf("entry short marshal: %v", err)
	}
	if _, err := ParseDiscoveryLogEntry(b[:1023]); !errors.Is(err, ErrShort) {
		t.Errorf("entry short parse: %v", err)
	}
}

func TestDiscoveryEntryMarshalErrors(t *testing.T) {
	e := sampleEntries()[0]
	b := filled(DiscoveryLogEntrySize, 0xEE)
	e.TrAddr = strings.Repeat("a", 257)
	if err := e.Marshal(b); !errors.Is(err, ErrTooLong) {
		t.Errorf("long TrAddr: %v", err)
	}
	e = sampleEntries()[0]
	e.SubNQN = "a\x00b"
	if err := e.Marshal(b); !errors.Is(err, ErrBadNQN) {
		t.Errorf("NUL in NQN: %v", err)
	}
	checkBytes(t, "unchanged", b, filled(DiscoveryLogEntrySize, 0xEE))
}
