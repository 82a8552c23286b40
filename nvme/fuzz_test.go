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

// FuzzParseConnectData builds the 1 KiB Connect data from a short input
// (see patchInput): the first byte picks the base (zeroes, a sample, all
// 'a') and extra length (bits 4-7), the rest patches it.
func FuzzParseConnectData(f *testing.F) {
	d := ConnectData{HostID: [16]byte{1}, CNTLID: 0xFFFF, SubNQN: DiscoveryNQN, HostNQN: HostNQNFromUUID([16]byte{2})}
	bases := [][]byte{nil, mustMarshal(f, ConnectDataSize, d.Marshal), filled(ConnectDataSize, 'a')}
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add([]byte{1, 0, 1, 3, 'n', 'q', 0xC3}) // SUBNQN (256) patched with a non-ASCII byte
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		if _, err := ParseConnectData(in); err == nil {
			t.Fatalf("%d-byte Connect data parsed", len(in))
		}
		if len(in) == 0 {
			return
		}
		b := patchInput(in[1:], bases[int(in[0]&15)%len(bases)], ConnectDataSize+int(in[0]>>4))
		d, err := ParseConnectData(b)
		if err != nil {
			if !errors.Is(err, ErrBadNQN) {
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
// The page is built from a short input (see patchInput): the first byte
// picks the base page (zeroes, a sample controller, all 0xFF), the rest
// patches it.
func FuzzParseIdentifyController(f *testing.F) {
	c := sampleController()
	sample := mustMarshal(f, IdentifySize, c.Marshal)
	bases := [][]byte{nil, sample, filled(IdentifySize, 0xFF)}
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add([]byte{1, 0x00, 0x03, 4, 'n', 'q', 'n', 0xFF}) // SUBNQN (768) patched with a non-ASCII byte
	f.Add([]byte{0, 4, 0, 3, 0xC3, 0xA9, ' '})           // non-ASCII SN
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		if _, err := ParseIdentifyController(in); !errors.Is(err, ErrShort) {
			t.Fatalf("%d-byte page: %v, want ErrShort", len(in), err)
		}
		if len(in) == 0 {
			return
		}
		b := patchInput(in[1:], bases[int(in[0])%len(bases)], IdentifySize+int(in[0]>>4))
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

// FuzzParseIdentifyNamespace builds the page from a short input (see
// patchInput): the first byte picks the base page (zeroes, a sample
// namespace, all 0xFF), the rest patches it.
func FuzzParseIdentifyNamespace(f *testing.F) {
	n := sampleNamespace()
	bases := [][]byte{nil, mustMarshal(f, IdentifySize, n.Marshal), filled(IdentifySize, 0xFF)}
	f.Add([]byte{0})
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Add([]byte{1, 26, 0, 1, 0x0F}) // FLBAS: format 15
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		if _, err := ParseIdentifyNamespace(in); err == nil {
			t.Fatalf("%d-byte page parsed", len(in))
		}
		if len(in) == 0 {
			return
		}
		b := patchInput(in[1:], bases[int(in[0])%len(bases)], IdentifySize+int(in[0]>>4))
		n1, err := ParseIdentifyNamespace(b)
		if err != nil {
			t.Fatal(err)
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

// FuzzParseNSDescriptors decodes the input itself and, so that long lists
// come from short inputs (see tileInput), a page of input[1:] repeated
// input[0]+1 times (up to a little more than IdentifySize, to cover the
// parser's cut).
func FuzzParseNSDescriptors(f *testing.F) {
	d := []NSDescriptor{{NIDTEUI64, make([]byte, 8)}, {NIDTUUID, make([]byte, 16)}, {NIDTCSI, []byte{0}}}
	page := mustMarshal(f, IdentifySize, func(b []byte) error { return MarshalNSDescriptors(b, d) })
	f.Add(append([]byte{0}, page[:4+8+4+16+4+1+4]...))
	f.Add([]byte{0, 0x80, 3, 0, 0, 1, 2, 3, 1, 8, 0, 0})
	f.Add([]byte{0, 1, 200, 0, 0})
	f.Add([]byte{255, 0x01})                                                                  // 0x01 bytes past the page: NIDL 1 for an EUI-64
	f.Add([]byte{200, 0x80, 16, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) // a long list of vendor IDs
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		checkNSDescriptors(t, in)
		if len(in) > 1 {
			checkNSDescriptors(t, tileInput(in[1:], int(in[0])+1, IdentifySize+64))
		}
	})
}

// checkNSDescriptors: a list that parses re-marshals to the same list.
func checkNSDescriptors(t *testing.T, b []byte) {
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
}

// FuzzParseNSList decodes the input itself and, so that long lists come
// from short inputs (see tileInput), a page of input[1:] repeated
// (input[0]+1)*8 times, up to a little more than a full list.
func FuzzParseNSList(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0})
	f.Add([]byte{255, 0xFF}) // a full list of 0xFFFFFFFF and more bytes
	f.Add([]byte{1, 0, 0})
	f.Add([]byte{127, 1, 0, 0, 0, 0, 0, 0, 0}) // NSID 1, then zero: the list ends
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		checkNSList(t, in)
		if len(in) > 1 {
			checkNSList(t, tileInput(in[1:], (int(in[0])+1)*8, IdentifySize+100))
		}
	})
}

// checkNSList: the list is bounded, holds no zero NSID and round-trips.
func checkNSList(t *testing.T, b []byte) {
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
}

func FuzzParseDiscoveryLog(f *testing.F) {
	e := sampleEntries()
	f.Add([]byte{0x04 | 2})                                 // two sample entries
	f.Add([]byte{0})                                        // empty log
	f.Add([]byte{0x03, 8, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0x80}) // NUMREC 1<<63, three zero records
	f.Add([]byte{0x14 | 1, 8, 0, 1, 5})                     // NUMREC 5, one record and a partial one
	f.Add([]byte{0x04 | 1, 0, 5, 4, 'n', 'q', 'n', 0xFF})   // a record's SUBNQN patched with a non-ASCII byte
	f.Add([]byte{0x04 | 1, 16, 0, 1, 1})                    // RECFMT 1
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		if _, _, err := ParseDiscoveryLog(in); !errors.Is(err, ErrShort) {
			t.Fatalf("%d-byte log: %v, want ErrShort", len(in), err)
		}
		if len(in) == 0 {
			return
		}
		k := int(in[0] & 3)
		size := DiscoveryLogSize(k) + int(in[0]>>4)*100
		var base []byte
		if in[0]&4 != 0 {
			base = make([]byte, size)
			if err := MarshalDiscoveryLog(base, 3, e[:min(k, len(e))]); err != nil {
				t.Fatal(err)
			}
		}
		b := patchInput(in[1:], base, size)
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

// FuzzParseLogPages decodes the error log entry, SMART, firmware slot and
// commands supported and effects pages from a page built from a short
// input (see patchInput): the first byte picks the page size and base
// (bits 0-2) and extra length (bits 3-7); the rest patches it.
func FuzzParseLogPages(f *testing.F) {
	e := ErrorLogEntry{ErrorCount: 1, Status: StatusInvalidField}
	s := SMARTLog{Temperature: 300, PowerOnHours: 5}
	bases := [][]byte{
		mustMarshal(f, ErrorLogEntrySize, e.Marshal),
		mustMarshal(f, SMARTLogSize, s.Marshal),
		filled(CommandsEffectsLogSize, 0xFF),
		make([]byte, FirmwareSlotLogSize),
		make([]byte, CommandsEffectsLogSize),
		make([]byte, ErrorLogEntrySize),
	}
	for i := range bases {
		f.Add([]byte{byte(i)})
	}
	f.Add([]byte{3, 0, 0, 1, 0x07}) // firmware AFI: slot 7
	f.Fuzz(func(t *testing.T, in []byte) {
		in = fuzzCap(in)
		checkLogPages(t, in)
		if len(in) == 0 {
			return
		}
		base := bases[int(in[0]&7)%len(bases)]
		checkLogPages(t, patchInput(in[1:], base, len(base)+int(in[0]>>3)))
	})
}

// checkLogPages: each page that parses from b re-marshals to what it was.
func checkLogPages(t *testing.T, b []byte) {
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
