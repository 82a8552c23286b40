package nvme

import (
	"errors"
	"strings"
	"testing"
)

// TestSetIdentify: CDW10 CNS bits 7:0, CNTID bits 31:16; CDW11 CSI 31:24.
func TestSetIdentify(t *testing.T) {
	var s SQE
	s.SetIdentify(CNSNSDescList, 7)
	want := make([]byte, 64)
	want[0] = 0x06
	put32(want, 4, 7)
	want[40] = 0x03
	checkBytes(t, "Identify", s[:], want)
	s.SetCDW(10, 0x00050001)
	s.SetCDW(11, 0x02000000)
	c := IdentifyCmd{&s}
	if c.CNS() != CNSController || c.CNTID() != 5 || c.CSI() != 2 {
		t.Errorf("CNS %d CNTID %d CSI %d", c.CNS(), c.CNTID(), c.CSI())
	}
}

func sampleController() IdentifyController {
	return IdentifyController{
		VID: 0x1B36, SSVID: 0x1AF4,
		SN: "SN0001", MN: "rdmablk", FR: "1.0",
		RAB: 6, IEEE: [3]byte{0x01, 0x02, 0x03}, CMIC: CMICMultiCtrl | CMICANA, MDTS: 5,
		CNTLID: 0x1234, VER: VS14, RTD3R: 0x11, RTD3E: 0x22,
		OAES: OAESNSAttr | OAESANAChange, CTRATT: CTRATTHostID128, CNTRLTYPE: CntrlTypeIO,
		FGUID: [16]byte{0xF0, 15: 0xFF}, CRDT: [3]uint16{1, 2, 3},
		OACS: 0x0102, ACL: 3, AERL: 3, FRMW: 0x03, LPA: LPACommandsEffects | LPAExtendedData, ELPE: 127, NPSS: 0,
		WCTEMP: 343, CCTEMP: 373, KAS: 50, ANATT: 10, ANACAP: ANACAPOptimized | ANACAPInaccessible,
		ANAGRPMAX: 32, NANAGRPID: 32, PELS: 0x55,
		SQES: 0x66, CQES: 0x44, MAXCMD: 128, NN: 1024, ONCS: ONCSDSM | ONCSWriteZeroes,
		FUSES: 1, FNA: 2, VWC: VWCPresent | VWCFlushAllSupported, AWUN: 7, AWUPF: 8, NVSCC: 1, NWPC: 2, ACWU: 9,
		SGLS: SGLSSupported | SGLSKeyed | SGLSOffset, MNAN: 1024,
		SubNQN: "nqn.2024-01.io.rdmablk:vol1",
		IOCCSZ: 260, IORCSZ: 1, ICDOFF: 0, FCATT: 0, MSDBD: 16, OFCS: OFCSDisconnect,
	}
}

// TestIdentifyControllerGolden writes each field at its offset from the
// spec (NVMe base spec 2.0 Figure 275, NVMe-oF Figure 28).
func TestIdentifyControllerGolden(t *testing.T) {
	c := sampleController()
	b := filled(IdentifySize, 0xEE)
	if err := c.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, IdentifySize)
	put16(w, 0, 0x1B36)               // VID
	put16(w, 2, 0x1AF4)               // SSVID
	putStr(w, 4, 20, "SN0001", ' ')   // SN at 4, 20 bytes space padded
	putStr(w, 24, 40, "rdmablk", ' ') // MN at 24, 40 bytes
	putStr(w, 64, 8, "1.0", ' ')      // FR at 64, 8 bytes
	w[72] = 6                         // RAB
	w[73], w[74], w[75] = 1, 2, 3     // IEEE
	w[76] = 0x0A                      // CMIC
	w[77] = 5                         // MDTS
	put16(w, 78, 0x1234)              // CNTLID at byte 78
	put32(w, 80, 0x00010400)          // VER
	put32(w, 84, 0x11)                // RTD3R
	put32(w, 88, 0x22)                // RTD3E
	put32(w, 92, 1<<8|1<<11)          // OAES
	put32(w, 96, 1)                   // CTRATT
	w[111] = 1                        // CNTRLTYPE
	w[112], w[127] = 0xF0, 0xFF       // FGUID 112..127
	put16(w, 128, 1)                  // CRDT1
	put16(w, 130, 2)                  // CRDT2
	put16(w, 132, 3)                  // CRDT3
	put16(w, 256, 0x0102)             // OACS
	w[258], w[259], w[260] = 3, 3, 3  // ACL, AERL, FRMW
	w[261] = 0x06                     // LPA
	w[262] = 127                      // ELPE
	w[263] = 0                        // NPSS
	put16(w, 266, 343)                // WCTEMP
	put16(w, 268, 373)                // CCTEMP
	put16(w, 320, 50)                 // KAS
	w[342] = 10                       // ANATT
	w[343] = 0x05                     // ANACAP
	put32(w, 344, 32)                 // ANAGRPMAX
	put32(w, 348, 32)                 // NANAGRPID
	put32(w, 352, 0x55)               // PELS
	w[512], w[513] = 0x66, 0x44       // SQES, CQES
	put16(w, 514, 128)                // MAXCMD
	put32(w, 516, 1024)               // NN
	put16(w, 520, 0x0C)               // ONCS: DSM bit 2, Write Zeroes bit 3
	put16(w, 522, 1)                  // FUSES
	w[524], w[525] = 2, 0x07          // FNA, VWC
	put16(w, 526, 7)                  // AWUN
	put16(w, 528, 8)                  // AWUPF
	w[530], w[531] = 1, 2             // NVSCC, NWPC
	put16(w, 532, 9)                  // ACWU
	put32(w, 536, 1|1<<2|1<<20)       // SGLS
	put32(w, 540, 1024)               // MNAN
	putStr(w, 768, 256, c.SubNQN, 0)  // SUBNQN at 768, NUL padded
	put32(w, 1792, 260)               // IOCCSZ at 1792
	put32(w, 1796, 1)                 // IORCSZ at 1796
	put16(w, 1800, 0)                 // ICDOFF at 1800
	w[1802] = 0                       // FCATT
	w[1803] = 16                      // MSDBD at 1803
	put16(w, 1804, 1)                 // OFCS at 1804
	checkBytes(t, "identify controller", b, w)

	got, err := ParseIdentifyController(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != c {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, c)
	}
}

func TestIdentifyControllerStrings(t *testing.T) {
	c := sampleController()
	c.SN = strings.Repeat("S", 25) // truncated to 20
	c.MN = "caf\u00e9 \x01model"   // non-ASCII and control → '?'
	c.FR = "12345678"              // exactly 8, no padding
	b := make([]byte, IdentifySize)
	if err := c.Marshal(b); err != nil {
		t.Fatal(err)
	}
	if string(b[4:24]) != strings.Repeat("S", 20) || b[24-1] != 'S' {
		t.Errorf("SN %q", b[4:24])
	}
	if got := string(b[24:40]); got != "caf?? ?model     "[:16] {
		t.Errorf("MN %q", got)
	}
	if string(b[64:72]) != "12345678" {
		t.Errorf("FR %q", b[64:72])
	}
	// Parse trims trailing spaces and NULs.
	copy(b[4:24], "ABC\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")
	p, err := ParseIdentifyController(b)
	if err != nil || p.SN != "ABC" || p.MN != "caf?? ?model" {
		t.Errorf("parsed SN %q MN %q err %v", p.SN, p.MN, err)
	}
}

func TestIdentifyControllerErrors(t *testing.T) {
	c := sampleController()
	if err := c.Marshal(make([]byte, IdentifySize-1)); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
	c.SubNQN = strings.Repeat("n", MaxNQNLength+1)
	b := filled(IdentifySize, 0xEE)
	if err := c.Marshal(b); !errors.Is(err, ErrBadNQN) {
		t.Errorf("long NQN: %v", err)
	}
	checkBytes(t, "unchanged on error", b, filled(IdentifySize, 0xEE))
	if _, err := ParseIdentifyController(b[:IdentifySize-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short parse: %v", err)
	}
	if _, err := ParseIdentifyController(b); !errors.Is(err, ErrBadNQN) {
		t.Errorf("unterminated SUBNQN: %v", err)
	}
}

func sampleNamespace() IdentifyNamespace {
	n := IdentifyNamespace{
		NSZE: 0x0102030405060708, NCAP: 0x1000, NUSE: 0x800,
		NSFEAT: NSFEATThinProvisioning | NSFEATOptPerf, NLBAF: 1, FLBAS: 1,
		MC: 2, DPC: 3, DPS: 4, NMIC: NMICShared, RESCAP: 0x7F, FPI: 0x80,
		DLFEAT: DLFEATReadZeroes | DLFEATWriteZeroesDeac,
		NAWUN:  1, NAWUPF: 2, NACWU: 3, NOIOB: 64, NVMCAP: 1 << 40,
		NPWG: 7, NPWA: 7, NPDG: 7, NPDA: 7, NOWS: 7,
		ANAGRPID: 9, NSATTR: 1, NVMSETID: 2, ENDGID: 3,
		NGUID: [16]byte{0: 0xAB, 15: 0xCD}, EUI64: [8]byte{0: 0x11, 7: 0x22},
	}
	n.LBAF[0] = LBAFormat{MS: 0, LBADS: 9, RP: 2}
	n.LBAF[1] = LBAFormat{MS: 8, LBADS: 12, RP: 0}
	return n
}

// TestIdentifyNamespaceGolden: NVM command set spec Figure 97.
func TestIdentifyNamespaceGolden(t *testing.T) {
	n := sampleNamespace()
	b := filled(IdentifySize, 0xEE)
	if err := n.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, IdentifySize)
	put64(w, 0, 0x0102030405060708) // NSZE
	put64(w, 8, 0x1000)             // NCAP
	put64(w, 16, 0x800)             // NUSE
	w[24] = 0x11                    // NSFEAT
	w[25] = 1                       // NLBAF
	w[26] = 1                       // FLBAS
	w[27], w[28], w[29] = 2, 3, 4   // MC, DPC, DPS
	w[30], w[31] = 1, 0x7F          // NMIC, RESCAP
	w[32], w[33] = 0x80, 0x09       // FPI, DLFEAT
	put16(w, 34, 1)                 // NAWUN
	put16(w, 36, 2)                 // NAWUPF
	put16(w, 38, 3)                 // NACWU
	put16(w, 46, 64)                // NOIOB
	put64(w, 48, 1<<40)             // NVMCAP low half, 56..63 zero
	for _, off := range []int{64, 66, 68, 70, 72} {
		put16(w, off, 7) // NPWG NPWA NPDG NPDA NOWS
	}
	put32(w, 92, 9)             // ANAGRPID at 92
	w[99] = 1                   // NSATTR at 99
	put16(w, 100, 2)            // NVMSETID
	put16(w, 102, 3)            // ENDGID
	w[104], w[119] = 0xAB, 0xCD // NGUID 104..119
	w[120], w[127] = 0x11, 0x22 // EUI64 120..127
	w[128+2], w[128+3] = 9, 2   // LBAF0: MS 0, LBADS 9 at +2, RP at +3
	put16(w, 132, 8)            // LBAF1 MS
	w[134] = 12                 // LBAF1 LBADS
	checkBytes(t, "identify namespace", b, w)

	got, err := ParseIdentifyNamespace(b)
	if err != nil || got != n {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, n)
	}
	if got.BlockSize() != 4096 {
		t.Errorf("BlockSize %d", got.BlockSize())
	}
	if _, err := ParseIdentifyNamespace(b[:100]); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}
	if err := n.Marshal(b[:100]); !errors.Is(err, ErrShort) {
		t.Errorf("short marshal: %v", err)
	}
	// A 128-bit NVMCAP with a non-zero high half saturates.
	b[56] = 1
	if got, _ := ParseIdentifyNamespace(b); got.NVMCAP != ^uint64(0) {
		t.Errorf("NVMCAP saturation: %#x", got.NVMCAP)
	}
}

func TestBlockSize(t *testing.T) {
	var n IdentifyNamespace
	n.LBAF[0].LBADS = 9
	if n.BlockSize() != 512 {
		t.Errorf("512: %d", n.BlockSize())
	}
	n.FLBAS = 1 // index beyond NLBAF (0)
	if n.BlockSize() != 0 {
		t.Error("index > NLBAF accepted")
	}
	n.NLBAF, n.LBAF[1].LBADS = 1, 8 // LBADS < 9 forbidden
	if n.BlockSize() != 0 {
		t.Error("LBADS 8 accepted")
	}
	n.LBAF[1].LBADS = 31
	if n.BlockSize() != 0 {
		t.Error("LBADS 31 accepted")
	}
	n.NLBAF, n.FLBAS = 63, 0x20 // FLBAS bits 6:5 = 1 → index 16, not kept
	if n.LBAFIndex() != 16 || n.BlockSize() != 0 {
		t.Errorf("index %d size %d", n.LBAFIndex(), n.BlockSize())
	}
	n.NLBAF = 15 // bits 6:5 ignored when at most 16 formats
	n.LBAF[0].LBADS = 12
	if n.LBAFIndex() != 0 || n.BlockSize() != 4096 {
		t.Errorf("index %d size %d", n.LBAFIndex(), n.BlockSize())
	}
}

func TestNSList(t *testing.T) {
	b := filled(IdentifySize, 0xEE)
	MarshalNSList(b, []uint32{1, 0, 2, 0x01020304})
	w := make([]byte, IdentifySize)
	put32(w, 0, 1)
	put32(w, 4, 2) // the zero NSID is skipped
	put32(w, 8, 0x01020304)
	checkBytes(t, "NS list", b, w)
	if got := ParseNSList(b); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 0x01020304 {
		t.Errorf("ParseNSList %v", got)
	}
	if ParseNSList(make([]byte, 4096)) != nil || ParseNSList(nil) != nil {
		t.Error("empty list not nil")
	}

	many := make([]uint32, 1500)
	for i := range many {
		many[i] = uint32(i + 1)
	}
	MarshalNSList(b, many)
	got := ParseNSList(b)
	if len(got) != NSListMax || got[NSListMax-1] != NSListMax {
		t.Errorf("truncated list: %d entries", len(got))
	}
	// A shorter buffer is filled as far as it goes.
	small := filled(10, 0xEE)
	MarshalNSList(small, []uint32{5, 6, 7})
	checkBytes(t, "short NS list", small, []byte{5, 0, 0, 0, 6, 0, 0, 0, 0, 0})
	// ParseNSList reads at most 1024 entries from a larger buffer.
	big := make([]byte, 8192)
	for i := 0; i < 2048; i++ {
		put32(big, 4*i, uint32(i+1))
	}
	if len(ParseNSList(big)) != NSListMax {
		t.Error("ParseNSList beyond 1024 entries")
	}
}

// TestNSDescriptors: header NIDT at +0, NIDL at +1, 2 reserved, NID at +4
// (NVMe base spec 2.0 Figure 278).
func TestNSDescriptors(t *testing.T) {
	eui := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	nguid := []byte{0xA0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xAF}
	d := []NSDescriptor{{NIDTEUI64, eui}, {NIDTNGUID, nguid}, {NIDTCSI, []byte{0}}}
	b := filled(IdentifySize, 0xEE)
	if err := MarshalNSDescriptors(b, d); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, IdentifySize)
	w[0], w[1] = 1, 8
	copy(w[4:], eui)
	w[12], w[13] = 2, 16
	copy(w[16:], nguid)
	w[32], w[33] = 4, 1
	w[36] = 0
	checkBytes(t, "NS descriptors", b, w)
	got, err := ParseNSDescriptors(b)
	if err != nil || len(got) != 3 || string(got[1].ID) != string(nguid) || got[2].Type != NIDTCSI {
		t.Fatalf("parse %+v %v", got, err)
	}
	b[16] = 0xFF // parsed IDs are copies
	if got[1].ID[0] != 0xA0 {
		t.Error("ID aliases the buffer")
	}

	for name, bad := range map[string][]NSDescriptor{
		"type 0":      {{0, eui}},
		"EUI64 len 9": {{NIDTEUI64, make([]byte, 9)}},
		"UUID len 8":  {{NIDTUUID, eui}},
		"empty ID":    {{0x80, nil}},
		"ID 256":      {{0x80, make([]byte, 256)}},
	} {
		if err := MarshalNSDescriptors(b, bad); !errors.Is(err, ErrBadDescriptor) {
			t.Errorf("%s: %v", name, err)
		}
	}
	tooMany := make([]NSDescriptor, 206) // 206 × 20 bytes > 4096
	for i := range tooMany {
		tooMany[i] = NSDescriptor{NIDTUUID, nguid}
	}
	if err := MarshalNSDescriptors(b, tooMany); !errors.Is(err, ErrTooMany) {
		t.Errorf("too many: %v", err)
	}
	if err := MarshalNSDescriptors(b[:100], d); !errors.Is(err, ErrShort) {
		t.Errorf("short: %v", err)
	}

	// Unknown types pass through; a wrong length for a known type and a
	// descriptor running off the end are errors.
	p := make([]byte, 64)
	p[0], p[1], p[4] = 0x80, 2, 0x55
	if got, err := ParseNSDescriptors(p); err != nil || len(got) != 1 || got[0].Type != 0x80 || len(got[0].ID) != 2 {
		t.Errorf("unknown type: %+v %v", got, err)
	}
	p[0], p[1] = NIDTEUI64, 4
	if _, err := ParseNSDescriptors(p); !errors.Is(err, ErrBadDescriptor) {
		t.Errorf("EUI64 length 4: %v", err)
	}
	p[0], p[1] = 0x80, 61
	if _, err := ParseNSDescriptors(p); !errors.Is(err, ErrBadDescriptor) {
		t.Errorf("overrun: %v", err)
	}
}
