package nvme

import (
	"errors"
	"testing"
)

// TestSetGetLogPage: opcode 02h; CDW10 LID 7:0, LSP 14:8, RAE 15, NUMDL
// 31:16; CDW11 NUMDU 15:0; CDW12-13 offset (NVMe base spec 2.0 Figure 197).
func TestSetGetLogPage(t *testing.T) {
	var s SQE
	s.SetGetLogPage(LogANA, 0xFFFFFFFF, 4096, 0x1000)
	w := make([]byte, 64)
	w[0] = 0x02
	put32(w, 4, 0xFFFFFFFF)
	put32(w, 40, 0x0C|1023<<16) // NUMDL = 1023 (1024 dwords, 0's based)
	put64(w, 48, 0x1000)        // LPOL/LPOU
	checkBytes(t, "Get Log Page", s[:], w)
	g := GetLogPageCmd{&s}
	if g.LID() != LogANA || g.NUMD() != 1024 || g.NumBytes() != 4096 || g.Offset() != 0x1000 || g.LSP() != 0 || g.RAE() {
		t.Errorf("getters: lid %#x numd %d off %#x", g.LID(), g.NUMD(), g.Offset())
	}

	g.SetLSP(ANALSPRGO)
	g.SetRAE(true)
	if s[41] != 0x81 || g.LSP() != 1 || !g.RAE() || g.LID() != LogANA || g.NUMD() != 1024 {
		t.Errorf("LSP/RAE: byte 41 %#x", s[41])
	}
	g.SetLSP(0xFF) // 7 bits only; RAE untouched
	if g.LSP() != 0x7F || !g.RAE() {
		t.Errorf("LSP mask: %#x", g.LSP())
	}
	g.SetRAE(false)
	if g.RAE() || g.LSP() != 0x7F {
		t.Error("SetRAE(false)")
	}

	// NUMD spans NUMDL and NUMDU.
	s.SetGetLogPage(LogDiscovery, 0, 0xFFFFFFFF, 0)
	if s.CDW10()>>16 != 0xFFFF || s.CDW11() != 0x3FFF || g.NUMD() != 1<<30 {
		t.Errorf("large NUMD: cdw10 %#x cdw11 %#x numd %d", s.CDW10(), s.CDW11(), g.NUMD())
	}
	for nb, numd := range map[uint32]uint64{0: 1, 1: 1, 4: 1, 5: 2, 1024: 256} {
		s.SetGetLogPage(LogError, 0, nb, 0)
		if g.NUMD() != numd {
			t.Errorf("numBytes %d: NUMD %d, want %d", nb, g.NUMD(), numd)
		}
	}
	// The largest encodable NUMD (2^32 dwords) does not wrap.
	s.SetCDW(10, 0xFFFF0000)
	s.SetCDW(11, 0xABCDFFFF)
	if g.NUMD() != 1<<32 || g.LSI() != 0xABCD {
		t.Errorf("max NUMD %d LSI %#x", g.NUMD(), g.LSI())
	}
	s.SetCDW(14, 0x01000000)
	if g.CSI() != 1 {
		t.Error("CSI")
	}
}

// TestErrorLogEntry: Figure 205 offsets.
func TestErrorLogEntry(t *testing.T) {
	e := ErrorLogEntry{
		ErrorCount: 5, SQID: 1, CID: 0x1234, Status: StatusInvalidField | StatusDNR,
		ParamErrorLoc: 0x0028, LBA: 0x99, NSID: 3, VSInfo: 0, TrType: TrTypeRDMA,
		CommandInfo: 0xABCD, TrTypeInfo: 0x11,
	}
	b := filled(ErrorLogEntrySize, 0xEE)
	if err := e.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, ErrorLogEntrySize)
	put64(w, 0, 5)          // error count
	put16(w, 8, 1)          // SQID
	put16(w, 10, 0x1234)    // CID
	put16(w, 12, 0x4002<<1) // status field bits 15:1, phase bit 0 clear
	put16(w, 14, 0x0028)    // parameter error location
	put64(w, 16, 0x99)      // LBA
	put32(w, 24, 3)         // NSID
	w[29] = 1               // transport type
	put64(w, 32, 0xABCD)    // command specific information
	put16(w, 40, 0x11)      // transport type specific
	checkBytes(t, "error log entry", b, w)
	got, err := ParseErrorLogEntry(b)
	if err != nil || got != e {
		t.Fatalf("round trip %+v %v", got, err)
	}
	if _, err := ParseErrorLogEntry(b[:63]); !errors.Is(err, ErrShort) {
		t.Error("short parse")
	}
	if err := e.Marshal(b[:63]); !errors.Is(err, ErrShort) {
		t.Error("short marshal")
	}
}

// TestSMARTLog: Figure 207 offsets; 128-bit counters at 32..191.
func TestSMARTLog(t *testing.T) {
	l := SMARTLog{
		CriticalWarning: SMARTWarnSpare | SMARTWarnReadOnly, Temperature: 310,
		AvailSpare: 100, SpareThresh: 10, PercentUsed: 3, EGCritWarnSummary: 1,
		DataUnitsRead: 1, DataUnitsWritten: 2, HostReads: 3, HostWrites: 4,
		CtrlBusyTime: 5, PowerCycles: 6, PowerOnHours: 7, UnsafeShutdowns: 8,
		MediaErrors: 9, NumErrLogEntries: 10, WarningTempTime: 11, CriticalTempTime: 12,
		TempSensor:     [8]uint16{300, 0, 0, 0, 0, 0, 0, 301},
		TMT1TransCount: 13, TMT2TransCount: 14, TMT1TotalTime: 15, TMT2TotalTime: 16,
	}
	b := filled(SMARTLogSize, 0xEE)
	if err := l.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, SMARTLogSize)
	w[0] = 0x09
	put16(w, 1, 310) // composite temperature, bytes 1-2
	w[3], w[4], w[5], w[6] = 100, 10, 3, 1
	for i, off := range []int{32, 48, 64, 80, 96, 112, 128, 144, 160, 176} {
		put64(w, off, uint64(i+1)) // 16-byte counters, high half zero
	}
	put32(w, 192, 11)
	put32(w, 196, 12)
	put16(w, 200, 300) // temperature sensor 1
	put16(w, 214, 301) // temperature sensor 8
	put32(w, 216, 13)
	put32(w, 220, 14)
	put32(w, 224, 15)
	put32(w, 228, 16)
	checkBytes(t, "SMART log", b, w)
	got, err := ParseSMARTLog(b)
	if err != nil || got != l {
		t.Fatalf("round trip %+v %v", got, err)
	}
	b[128+8] = 1 // power on hours above 2^64
	if got, _ := ParseSMARTLog(b); got.PowerOnHours != ^uint64(0) || got.PowerCycles != 6 {
		t.Errorf("saturation: %d", got.PowerOnHours)
	}
	if _, err := ParseSMARTLog(b[:511]); !errors.Is(err, ErrShort) {
		t.Error("short parse")
	}
	if err := l.Marshal(b[:511]); !errors.Is(err, ErrShort) {
		t.Error("short marshal")
	}
}

// TestFirmwareSlotLog: AFI at 0, FRS1 at 8 ... FRS7 at 56 (Figure 209).
func TestFirmwareSlotLog(t *testing.T) {
	l := FirmwareSlotLog{AFI: 1, FRS: [7]string{"1.0", "", "", "", "", "", "toolongrev"}}
	b := filled(FirmwareSlotLogSize, 0xEE)
	if err := l.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, FirmwareSlotLogSize)
	w[0] = 1
	putStr(w, 8, 8, "1.0", ' ')
	putStr(w, 56, 8, "toolongr", ' ') // truncated to 8
	checkBytes(t, "firmware slot log", b, w)
	got, err := ParseFirmwareSlotLog(b)
	if err != nil || got.AFI != 1 || got.FRS[0] != "1.0" || got.FRS[1] != "" || got.FRS[6] != "toolongr" {
		t.Fatalf("parse %+v %v", got, err)
	}
	if _, err := ParseFirmwareSlotLog(b[:511]); !errors.Is(err, ErrShort) {
		t.Error("short parse")
	}
	if err := l.Marshal(b[:511]); !errors.Is(err, ErrShort) {
		t.Error("short marshal")
	}
}

// TestCommandsEffectsLog: ACS[op] at 4*op, IOCS[op] at 1024+4*op.
func TestCommandsEffectsLog(t *testing.T) {
	var l CommandsEffectsLog
	l.ACS[AdminIdentify] = CECSUPP
	l.ACS[AdminFormatNVM] = CECSUPP | CELBCC | CECSESingleNS
	l.IOCS[IOWrite] = CECSUPP | CELBCC
	b := filled(CommandsEffectsLogSize, 0xEE)
	if err := l.Marshal(b); err != nil {
		t.Fatal(err)
	}
	w := make([]byte, CommandsEffectsLogSize)
	put32(w, 4*0x06, 1)
	put32(w, 4*0x80, 1|2|1<<16)
	put32(w, 1024+4*0x01, 3)
	checkBytes(t, "commands effects", b, w)
	got, err := ParseCommandsEffectsLog(b)
	if err != nil || got != l {
		t.Fatal("round trip")
	}
	if _, err := ParseCommandsEffectsLog(b[:4095]); !errors.Is(err, ErrShort) {
		t.Error("short parse")
	}
	if err := l.Marshal(b[:4095]); !errors.Is(err, ErrShort) {
		t.Error("short marshal")
	}
}

func TestChangedNSList(t *testing.T) {
	b := filled(ChangedNSListSize, 0xEE)
	MarshalChangedNSList(b, []uint32{3, 9})
	w := make([]byte, ChangedNSListSize)
	put32(w, 0, 3)
	put32(w, 4, 9)
	checkBytes(t, "changed NS list", b, w)

	many := make([]uint32, NSListMax+1)
	for i := range many {
		many[i] = uint32(i + 1)
	}
	copy(b, filled(ChangedNSListSize, 0xEE))
	MarshalChangedNSList(b, many)
	w = make([]byte, ChangedNSListSize)
	put32(w, 0, 0xFFFFFFFF) // overflow: first entry FFFFFFFFh, rest zero
	checkBytes(t, "changed NS list overflow", b, w)
	if got := ParseNSList(b); len(got) != 1 || got[0] != ChangedNSListOverflow {
		t.Errorf("parse overflow %v", got)
	}
	// Exactly 1024 fits without overflow.
	MarshalChangedNSList(b, many[:NSListMax])
	if got := ParseNSList(b); len(got) != NSListMax {
		t.Errorf("1024 entries: %d", len(got))
	}
	MarshalChangedNSList(make([]byte, 2), many) // no room even for the marker: no panic
}
