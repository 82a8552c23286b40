package nvme

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Fuzz targets for every decoder. `go test` runs the seeds; run one with
// go test -run='^$' -fuzz='^FuzzParseANALog$' -fuzztime=10s ./nvme/

func mustMarshal(f *testing.F, size int, m func([]byte) error) []byte {
	f.Helper()
	b := make([]byte, size)
	if err := m(b); err != nil {
		f.Fatal(err)
	}
	return b
}

func FuzzParseConnectData(f *testing.F) {
	d := ConnectData{HostID: [16]byte{1}, CNTLID: 0xFFFF, SubNQN: DiscoveryNQN, HostNQN: HostNQNFromUUID([16]byte{2})}
	f.Add(mustMarshal(f, ConnectDataSize, d.Marshal))
	f.Add(make([]byte, ConnectDataSize))
	f.Add(filled(ConnectDataSize, 'a'))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseConnectData(b)
		if err != nil {
			if len(b) >= ConnectDataSize && !errors.Is(err, ErrBadNQN) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		out := make([]byte, ConnectDataSize)
		err = d.Marshal(out)
		if len(d.SubNQN) > MaxNQNLength || len(d.HostNQN) > MaxNQNLength {
			if !errors.Is(err, ErrBadNQN) {
				t.Fatalf("long NQN marshalled: %v", err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		d2, err := ParseConnectData(out)
		if err != nil || d2 != d {
			t.Fatalf("round trip: %+v vs %+v (%v)", d2, d, err)
		}
	})
}

func FuzzParseCMRequest(f *testing.F) {
	r := CMRequest{QID: 1, HRQSize: 32, HSQSize: 31}
	f.Add(mustMarshal(f, CMRequestSize, r.Marshal))
	f.Add(make([]byte, 40))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseCMRequest(b)
		if err != nil {
			return
		}
		out := make([]byte, CMRequestSize)
		if err := r.Marshal(out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[:10], b[:10]) {
			t.Fatalf("fields not preserved: % x vs % x", out[:10], b[:10])
		}
		if r2, err := ParseCMRequest(out); err != nil || r2 != r {
			t.Fatal("round trip")
		}
	})
}

func FuzzParseCMAccept(f *testing.F) {
	a := CMAccept{CRQSize: 128}
	f.Add(mustMarshal(f, CMAcceptSize, a.Marshal))
	f.Add([]byte{0, 0, 1, 0})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseCMAccept(b)
		if err != nil {
			return
		}
		out := make([]byte, CMAcceptSize)
		if err := a.Marshal(out); err != nil || !bytes.Equal(out[:4], b[:4]) {
			t.Fatalf("round trip % x vs % x (%v)", out[:4], b[:4], err)
		}
	})
}

func FuzzParseCMReject(f *testing.F) {
	f.Add([]byte{0, 0, 6, 0})
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseCMReject(b)
		if err != nil {
			if len(b) >= CMRejectSize {
				t.Fatal(err)
			}
			return
		}
		out := make([]byte, CMRejectSize)
		if err := r.Marshal(out); err != nil || !bytes.Equal(out, b[:4]) {
			t.Fatalf("round trip % x vs % x", out, b[:4])
		}
	})
}

// FuzzParseIdentifyController checks that marshal∘parse reaches a fixed point after one
// normalisation (strings trimmed, non-ASCII replaced, reserved bytes
// zeroed): parse(marshal(parse(b))) == parse(b) modulo that normalisation.
func FuzzParseIdentifyController(f *testing.F) {
	c := sampleController()
	f.Add(mustMarshal(f, IdentifySize, c.Marshal))
	f.Add(make([]byte, IdentifySize))
	f.Add(filled(IdentifySize, 0xFF))
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		c1, err := ParseIdentifyController(b)
		if err != nil {
			return
		}
		b2 := make([]byte, IdentifySize)
		if err := c1.Marshal(b2); err != nil {
			if errors.Is(err, ErrBadNQN) && len(c1.SubNQN) > MaxNQNLength {
				return
			}
			t.Fatal(err)
		}
		c2, err := ParseIdentifyController(b2)
		if err != nil {
			t.Fatal(err)
		}
		b3 := make([]byte, IdentifySize)
		if err := c2.Marshal(b3); err != nil || !bytes.Equal(b2, b3) {
			t.Fatalf("not idempotent (%v)", err)
		}
		// Everything but the normalised strings survives the first trip.
		c1.SN, c1.MN, c1.FR = c2.SN, c2.MN, c2.FR
		if c1 != c2 {
			t.Fatalf("fields changed:\n%+v\n%+v", c1, c2)
		}
	})
}

func FuzzParseIdentifyNamespace(f *testing.F) {
	n := sampleNamespace()
	f.Add(mustMarshal(f, IdentifySize, n.Marshal))
	f.Add(make([]byte, IdentifySize))
	f.Add(filled(IdentifySize, 0xFF))
	f.Fuzz(func(t *testing.T, b []byte) {
		n1, err := ParseIdentifyNamespace(b)
		if err != nil {
			if len(b) >= IdentifySize {
				t.Fatal(err)
			}
			return
		}
		if bs := n1.BlockSize(); bs != 0 && (bs < 512 || bs > 1<<30 || bs&(bs-1) != 0) {
			t.Fatalf("BlockSize %d", bs)
		}
		b2 := make([]byte, IdentifySize)
		if err := n1.Marshal(b2); err != nil {
			t.Fatal(err)
		}
		n2, err := ParseIdentifyNamespace(b2)
		if err != nil || n2 != n1 {
			t.Fatalf("round trip (%v)", err)
		}
	})
}

func FuzzParseNSDescriptors(f *testing.F) {
	d := []NSDescriptor{{NIDTEUI64, make([]byte, 8)}, {NIDTUUID, make([]byte, 16)}, {NIDTCSI, []byte{0}}}
	f.Add(mustMarshal(f, IdentifySize, func(b []byte) error { return MarshalNSDescriptors(b, d) }))
	f.Add([]byte{0x80, 3, 0, 0, 1, 2, 3, 1, 8, 0, 0})
	f.Add([]byte{1, 200, 0, 0})
	f.Add(filled(5000, 0x01))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseNSDescriptors(b)
		if err != nil {
			return
		}
		out := make([]byte, IdentifySize)
		if err := MarshalNSDescriptors(out, d); err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		d2, err := ParseNSDescriptors(out)
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("round trip (%v)", err)
		}
	})
}

func FuzzParseNSList(f *testing.F) {
	b := make([]byte, IdentifySize)
	MarshalNSList(b, []uint32{1, 2, 3})
	f.Add(b)
	f.Add(filled(IdentifySize+100, 0xFF))
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		ids := ParseNSList(b)
		if len(ids) > NSListMax || len(ids) > len(b)/4 {
			t.Fatalf("%d entries from %d bytes", len(ids), len(b))
		}
		for _, id := range ids {
			if id == 0 {
				t.Fatal("zero NSID returned")
			}
		}
		out := make([]byte, IdentifySize)
		MarshalNSList(out, ids)
		if got := ParseNSList(out); !reflect.DeepEqual(got, ids) {
			t.Fatal("round trip")
		}
	})
}

func FuzzParseDiscoveryLog(f *testing.F) {
	e := sampleEntries()
	f.Add(mustMarshal(f, DiscoveryLogSize(len(e)), func(b []byte) error { return MarshalDiscoveryLog(b, 3, e) }))
	f.Add(make([]byte, 1024))
	hdr := make([]byte, 2048)
	put64(hdr, 8, 1<<63)
	f.Add(hdr)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, entries, err := ParseDiscoveryLog(b)
		if uint64(len(entries)) > h.NumRec || len(entries) > max(len(b)-1024, 0)/1024 {
			t.Fatalf("%d entries, NUMREC %d, %d bytes", len(entries), h.NumRec, len(b))
		}
		if err != nil {
			return
		}
		out := make([]byte, DiscoveryLogSize(len(entries)))
		if err := MarshalDiscoveryLog(out, h.GenCtr, entries); err != nil {
			if errors.Is(err, ErrBadNQN) {
				return // parse accepts NQNs up to 255 bytes
			}
			t.Fatal(err)
		}
		h2, e2, err := ParseDiscoveryLog(out)
		if err != nil || h2.GenCtr != h.GenCtr || !reflect.DeepEqual(e2, entries) {
			t.Fatalf("round trip (%v)", err)
		}
	})
}

func FuzzParseANALog(f *testing.F) {
	g := sampleGroups()
	f.Add(mustMarshal(f, ANALogSize(g, false), func(b []byte) error { _, err := MarshalANALog(b, 5, g, false); return err }))
	f.Add(mustMarshal(f, ANALogSize(g, true), func(b []byte) error { _, err := MarshalANALog(b, 5, g, true); return err }))
	hostile := make([]byte, 64)
	put16(hostile, 8, 0xFFFF)
	put32(hostile, 20, 0xFFFFFFFF)
	f.Add(hostile)
	f.Fuzz(func(t *testing.T, b []byte) {
		chg, groups, err := ParseANALog(b)
		total := 0
		for _, g := range groups {
			total += ANAGroupDescSize + 4*len(g.NSIDs)
			if g.State > 0xF {
				t.Fatal("state beyond 4 bits")
			}
		}
		if len(groups) > 0 && ANALogHeaderSize+total > len(b) {
			t.Fatalf("decoded %d bytes from %d", ANALogHeaderSize+total, len(b))
		}
		if err != nil {
			return
		}
		out := make([]byte, ANALogSize(groups, false))
		if _, err := MarshalANALog(out, chg, groups, false); err != nil {
			t.Fatal(err)
		}
		chg2, g2, err := ParseANALog(out)
		if err != nil || chg2 != chg || !reflect.DeepEqual(g2, groups) {
			t.Fatalf("round trip (%v)", err)
		}
	})
}

func FuzzParseDSMRange(f *testing.F) {
	f.Add(make([]byte, 32), 1)
	f.Add(make([]byte, 16), -1)
	f.Add(make([]byte, 48), 1<<60)
	f.Add([]byte{1, 2, 3}, 0)
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		r, ok := ParseDSMRange(b, i)
		want := i >= 0 && uint64(i) < uint64(len(b)/DSMRangeSize)
		if ok != want {
			t.Fatalf("ParseDSMRange(len %d, %d) ok=%v want %v", len(b), i, ok, want)
		}
		out := make([]byte, len(b))
		if PutDSMRange(out, i, r) != ok {
			t.Fatal("Put/Parse disagree on range")
		}
		if ok {
			if r2, _ := ParseDSMRange(out, i); r2 != r {
				t.Fatal("round trip")
			}
			if !bytes.Equal(out[i*16:i*16+16], b[i*16:i*16+16]) {
				t.Fatal("bytes not preserved")
			}
		}
	})
}

// FuzzSGL checks the descriptor accessors, in particular that
// InCapsuleSpan never returns a span outside [0, icdLen).
func FuzzSGL(f *testing.F) {
	var d SGL
	d.SetDataBlock(0x10, 0x1000, SGLSubtypeOffset)
	f.Add(d[:], 0x2000)
	d.SetDataBlock(0xFFFFFFFFFFFFFFF0, 0x20, SGLSubtypeOffset)
	f.Add(d[:], 1<<20)
	d.SetKeyed(1, MaxKeyedSGLLength, 2, SGLSubtypeInvalidate)
	f.Add(d[:], -5)
	f.Fuzz(func(t *testing.T, raw []byte, icdLen int) {
		var d SGL
		copy(d[:], raw)
		off, n, ok := d.InCapsuleSpan(icdLen)
		if ok {
			if off < 0 || n < 0 || icdLen < 0 || off > icdLen || n > icdLen-off {
				t.Fatalf("span [%d,+%d) outside [0,%d)", off, n, icdLen)
			}
			if uint64(off) != d.Address() || uint32(n) != d.Length() {
				t.Fatal("span does not match descriptor")
			}
		} else if off != 0 || n != 0 {
			t.Fatal("non-zero span on failure")
		}
		if d.IsKeyed() {
			if d.Length() > MaxKeyedSGLLength {
				t.Fatal("keyed length beyond 24 bits")
			}
			var e SGL
			e.SetKeyed(d.Address(), d.Length(), d.Key(), d.Subtype())
			if e != d {
				t.Fatalf("keyed round trip % x vs % x", e, d)
			}
		}
		if d.IsInCapsule() {
			var e SGL
			e.SetDataBlock(d.Address(), d.Length(), d.Subtype())
			if e.Address() != d.Address() || e.Length() != d.Length() || e[15] != d[15] {
				t.Fatal("data block round trip")
			}
		}
	})
}

func FuzzLoadSQECQE(f *testing.F) {
	var s SQE
	s.SetRW(IOWrite, 1, 2, 3, RWFUA)
	f.Add(s[:])
	f.Add(make([]byte, 15))
	f.Add(filled(80, 0xFF))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := LoadSQE(b)
		if ok != (len(b) >= SQESize) || ok && !bytes.Equal(s[:], b[:SQESize]) {
			t.Fatal("LoadSQE")
		}
		for n := -1; n <= 16; n++ {
			_ = s.CDW(n)
		}
		_ = RWCmd{&s}.NLB()
		_ = GetLogPageCmd{&s}.NUMD()
		_ = s.SGL1().Length()
		c, ok := LoadCQE(b)
		if ok != (len(b) >= CQESize) || ok && !bytes.Equal(c[:], b[:CQESize]) {
			t.Fatal("LoadCQE")
		}
		if ok {
			before := c
			c.SetStatus(c.Status())
			if c != before {
				t.Fatalf("SetStatus(Status()) changed the CQE: % x vs % x", c, before)
			}
			_ = c.Status().String()
		}
	})
}

func FuzzStatusString(f *testing.F) {
	f.Add(uint16(0))
	f.Add(uint16(StatusConnectInvalidHost | StatusDNR | StatusMore))
	f.Add(uint16(0xFFFF))
	f.Fuzz(func(t *testing.T, v uint16) {
		s := Status(v)
		str := s.String()
		if !strings.Contains(str, "(sct 0x") || str[0] == ' ' {
			t.Fatalf("String %q", str)
		}
		if strings.Contains(str, "DNR") != s.DNR() || strings.Contains(str, "More") != s.More() {
			t.Fatalf("flags in %q", str)
		}
		if s.Error() != "nvme: "+str {
			t.Fatal("Error prefix")
		}
		if MakeStatus(s.SCT(), s.SC()) != s&0x7FF {
			t.Fatal("MakeStatus(SCT, SC)")
		}
	})
}

func FuzzParseLogPages(f *testing.F) {
	e := ErrorLogEntry{ErrorCount: 1, Status: StatusInvalidField}
	f.Add(mustMarshal(f, ErrorLogEntrySize, e.Marshal))
	s := SMARTLog{Temperature: 300, PowerOnHours: 5}
	f.Add(mustMarshal(f, SMARTLogSize, s.Marshal))
	f.Add(filled(CommandsEffectsLogSize, 0xFF))
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := ParseErrorLogEntry(b); err == nil {
			out := make([]byte, ErrorLogEntrySize)
			if err := e.Marshal(out); err != nil {
				t.Fatal(err)
			}
			if e2, _ := ParseErrorLogEntry(out); e2 != e {
				t.Fatal("error log round trip")
			}
		}
		if l, err := ParseSMARTLog(b); err == nil {
			out := make([]byte, SMARTLogSize)
			if err := l.Marshal(out); err != nil {
				t.Fatal(err)
			}
			if l2, _ := ParseSMARTLog(out); l2 != l {
				t.Fatal("SMART round trip")
			}
		}
		if l, err := ParseFirmwareSlotLog(b); err == nil {
			out := make([]byte, FirmwareSlotLogSize)
			if err := l.Marshal(out); err != nil {
				t.Fatal(err)
			}
			l2, _ := ParseFirmwareSlotLog(out)
			out2 := make([]byte, FirmwareSlotLogSize)
			_ = l2.Marshal(out2)
			if !bytes.Equal(out, out2) || l2.AFI != l.AFI {
				t.Fatal("firmware slot not idempotent")
			}
		}
		if l, err := ParseCommandsEffectsLog(b); err == nil {
			out := make([]byte, CommandsEffectsLogSize)
			if err := l.Marshal(out); err != nil || !bytes.Equal(out[:2048], b[:2048]) {
				t.Fatal("effects round trip")
			}
		}
	})
}

func FuzzValidNQN(f *testing.F) {
	f.Add(DiscoveryNQN)
	f.Add(HostNQNFromUUID([16]byte{1}))
	f.Add("nqn.2014-08.x")
	f.Add("nqn.2014-1")
	f.Fuzz(func(t *testing.T, s string) {
		if !ValidNQN(s) {
			return
		}
		if len(s) > MaxNQNLength || !strings.HasPrefix(s, "nqn.") || strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("accepted %q", s)
		}
		// A valid NQN always fits connect data.
		d := ConnectData{SubNQN: s, HostNQN: s}
		if err := d.Marshal(make([]byte, ConnectDataSize)); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzAsyncEventNumQueues(f *testing.F) {
	f.Add(uint32(0x000C0302))
	f.Add(uint32(0xFFFFFFFF))
	f.Fuzz(func(t *testing.T, v uint32) {
		typ, info, lid := ParseAsyncEventResult(v)
		if MakeAsyncEventResult(typ, info, lid) != v&0x00FFFF07 {
			t.Fatal("async event round trip")
		}
		sq, cq := ParseNumQueues(v)
		if sq == 0 || cq == 0 {
			t.Fatal("zero queue count")
		}
		if uint16(v) != 0xFFFF && uint16(v>>16) != 0xFFFF && NumQueuesValue(sq, cq) != v {
			t.Fatal("num queues round trip")
		}
	})
}

func FuzzParseANALogHeader(f *testing.F) {
	f.Add(make([]byte, ANALogHeaderSize))
	f.Add([]byte{1, 2, 3})
	hostile := make([]byte, ANALogHeaderSize)
	put16(hostile, 8, 0xFFFF)
	f.Add(hostile)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseANALogHeader(b)
		if err != nil {
			if len(b) >= ANALogHeaderSize {
				t.Fatalf("error %v on %d bytes", err, len(b))
			}
			return
		}
		if h.NumGroups < 0 || h.NumGroups > ANAMaxGroups {
			t.Fatalf("NumGroups %d", h.NumGroups)
		}
		if chg, _, _ := ParseANALog(b); chg != h.ChangeCount {
			t.Fatalf("CHGCNT %d vs ParseANALog %d", h.ChangeCount, chg)
		}
	})
}
