package tcppdu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// hx builds bytes from a list of byte values and zero runs: an int n < 0
// means -n zero bytes.
func hx(parts ...int) []byte {
	var b []byte
	for _, p := range parts {
		if p < 0 {
			b = append(b, make([]byte, -p)...)
			continue
		}
		b = append(b, byte(p))
	}
	return b
}

// Golden PDUs, assembled by hand from the field tables of TCP §3.6.2.
var (
	goldenICReq = hx(0x00, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00, // ICReq, HLEN 128, PDO 0, PLEN 128
		0x00, 0x00, // PFV 0
		0x00,                   // HPDA 0
		0x03,                   // DGST: header and data
		0x0f, 0x00, 0x00, 0x00, // MAXR2T 15 (16 outstanding)
		-112)
	goldenICResp = hx(0x01, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00, 0x00,
		0x00, 0x00, // PFV
		0x00,                   // CPDA
		0x01,                   // DGST: header only
		0x00, 0x00, 0x02, 0x00, // MAXH2CDATA 128 KiB
		-112)
	// A Write capsule with 8 bytes of in-capsule data, no digests: PDO 72, PLEN 80.
	goldenCapsuleCmd = append(hx(0x04, 0x00, 0x48, 0x48, 0x50, 0x00, 0x00, 0x00,
		0x01, 0x00, 0x34, 0x12, 0x01, 0x00, 0x00, 0x00, // opcode Write, CID 0x1234, NSID 1
		-56),
		0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8)
	goldenCapsuleResp = hx(0x05, 0x00, 0x18, 0x00, 0x18, 0x00, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // DW0, DW1
		0x05, 0x00, 0x01, 0x00, // SQHD 5, SQID 1
		0x34, 0x12, 0x00, 0x00) // CID 0x1234, status 0
	goldenH2CData = append(hx(0x06, 0x04, 0x18, 0x18, 0x28, 0x00, 0x00, 0x00, // H2CData LAST_PDU, PDO 24, PLEN 40
		0x34, 0x12, // CCCID
		0x07, 0x00, // TTAG 7
		0x00, 0x10, 0x00, 0x00, // DATAO 4096
		0x10, 0x00, 0x00, 0x00, // DATAL 16
		-4),
		bytes.Repeat([]byte{0x5a}, 16)...)
	goldenC2HData = append(hx(0x07, 0x0c, 0x18, 0x18, 0x20, 0x00, 0x00, 0x00, // C2HData LAST_PDU|SUCCESS, PLEN 32
		0x34, 0x12, 0x00, 0x00,
		0x00, 0x00, 0x00, 0x00, // DATAO 0
		0x08, 0x00, 0x00, 0x00, // DATAL 8
		-4),
		1, 2, 3, 4, 5, 6, 7, 8)
	goldenR2T = hx(0x09, 0x00, 0x18, 0x00, 0x18, 0x00, 0x00, 0x00,
		0x34, 0x12, // CCCID
		0x07, 0x00, // TTAG
		0x00, 0x00, 0x01, 0x00, // R2TO 64 KiB
		0x00, 0x00, 0x01, 0x00, // R2TL 64 KiB
		-4)
	goldenC2HTermReq = append(hx(0x03, 0x00, 0x18, 0x00, 0x20, 0x00, 0x00, 0x00, // C2HTermReq, PLEN 32
		0x01, 0x00, // FES invalid header field
		0x02, 0x00, 0x00, 0x00, // FEI: byte 2 (HLEN)
		-10),
		0x04, 0x00, 0x47, 0x00, 0x48, 0x00, 0x00, 0x00) // the header in error (HLEN 0x47)
)

func TestDigestKnownVector(t *testing.T) {
	// CRC32C check value (RFC 3720 B.4 / the Castagnoli standard).
	if got := Digest([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC32C(123456789) = %#x", got)
	}
	if got := UpdateDigest(UpdateDigest(0, []byte("1234")), []byte("56789")); got != 0xE3069283 {
		t.Fatalf("incremental %#x", got)
	}
	// 32 zero bytes: RFC 3720 B.4 gives 8a 91 36 aa on the wire (little endian).
	var b [36]byte
	PutHeaderDigest(b[:], 32)
	if !bytes.Equal(b[32:], []byte{0xaa, 0x36, 0x91, 0x8a}) {
		t.Fatalf("digest of 32 zeros on the wire % x", b[32:])
	}
}

func TestGoldenICReq(t *testing.T) {
	r, err := ParseICReq(goldenICReq)
	if err != nil {
		t.Fatal(err)
	}
	if r != (ICReq{PFV: 0, HPDA: 0, DGST: 3, MAXR2T: 15}) {
		t.Fatalf("%+v", r)
	}
	var b [128]byte
	for i := range b {
		b[i] = 0xee
	}
	r.Marshal(b[:])
	if !bytes.Equal(b[:], goldenICReq) {
		t.Fatalf("marshal\n% x\nwant\n% x", b, goldenICReq)
	}
	resp, err := ParseICResp(goldenICResp)
	if err != nil {
		t.Fatal(err)
	}
	if resp != (ICResp{DGST: 1, MAXH2CDATA: 128 << 10}) {
		t.Fatalf("%+v", resp)
	}
	resp.Marshal(b[:])
	if !bytes.Equal(b[:], goldenICResp) {
		t.Fatalf("marshal\n% x\nwant\n% x", b, goldenICResp)
	}
}

func TestGoldenCapsules(t *testing.T) {
	h, _ := ParseCommonHeader(goldenCapsuleCmd)
	f, err := h.Frame(Limits{MaxData: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if f.HeaderLen != 72 || f.DataOff != 72 || f.DataLen != 8 || f.HeaderDigest || f.DataDigest {
		t.Fatalf("%+v", f)
	}
	sqe, ok := ParseCapsuleCmd(goldenCapsuleCmd)
	if !ok || sqe.Opcode() != 0x01 || sqe.CID() != 0x1234 || sqe.NSID() != 1 {
		t.Fatalf("sqe %v % x", ok, sqe[:8])
	}
	b := make([]byte, 256)
	n := PutCapsuleCmd(b, &sqe, 8, Digests{}, 0)
	copy(b[n:], goldenCapsuleCmd[72:])
	if n != 72 || !bytes.Equal(b[:80], goldenCapsuleCmd) {
		t.Fatalf("PutCapsuleCmd %d\n% x", n, b[:80])
	}

	// The same capsule with both digests: HDGSTF|DDGSTF, PDO 76, PLEN 88.
	n = PutCapsuleCmd(b, &sqe, 8, Digests{Header: true, Data: true}, 0)
	wantHdr := append([]byte{0x04, 0x03, 0x48, 0x4c, 0x58, 0x00, 0x00, 0x00}, goldenCapsuleCmd[8:72]...)
	if n != 76 || !bytes.Equal(b[:72], wantHdr) || binary.LittleEndian.Uint32(b[72:]) != Digest(wantHdr) {
		t.Fatalf("digested capsule %d\n% x", n, b[:76])
	}
	if err := CheckHeaderDigest(b[:76], 72); err != nil {
		t.Fatal(err)
	}
	h, _ = ParseCommonHeader(b)
	f, err = h.Frame(Limits{Digests: Digests{Header: true, Data: true}, MaxData: 8})
	if err != nil || f.HeaderLen != 76 || f.DataOff != 76 || f.DataLen != 8 || !f.DataDigest {
		t.Fatalf("%+v %v", f, err)
	}

	cqe, ok := ParseCapsuleResp(goldenCapsuleResp)
	if !ok || cqe.CID() != 0x1234 || cqe.SQHD() != 5 || cqe.SQID() != 1 || cqe.Status() != nvme.StatusSuccess {
		t.Fatalf("cqe %v %+v", ok, cqe)
	}
	n = PutCapsuleResp(b, &cqe, Digests{})
	if n != 24 || !bytes.Equal(b[:24], goldenCapsuleResp) {
		t.Fatalf("PutCapsuleResp % x", b[:n])
	}
}

func TestGoldenData(t *testing.T) {
	cases := []struct {
		name  string
		pdu   []byte
		want  DataHeader
		flags uint8
	}{
		{"H2CData", goldenH2CData, DataHeader{CCCID: 0x1234, TTAG: 7, DATAO: 4096, DATAL: 16}, FlagLastPDU},
		{"C2HData", goldenC2HData, DataHeader{CCCID: 0x1234, DATAL: 8}, FlagLastPDU | FlagSuccess},
		{"R2T", goldenR2T, DataHeader{CCCID: 0x1234, TTAG: 7, DATAO: 64 << 10, DATAL: 64 << 10}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, _ := ParseCommonHeader(c.pdu)
			f, err := h.Frame(Limits{MaxData: 4096})
			if err != nil {
				t.Fatal(err)
			}
			d, err := ParseData(c.pdu, f)
			if err != nil {
				t.Fatal(err)
			}
			if d != c.want || f.Flags != c.flags {
				t.Fatalf("%+v flags %#x", d, f.Flags)
			}
			b := make([]byte, 64)
			var n int
			if h.Type == TypeR2T {
				n = PutR2T(b, d, Digests{})
			} else {
				n = PutData(b, h.Type, d, c.flags, Digests{}, 0)
				n += copy(b[n:], c.pdu[f.DataOff:])
			}
			if !bytes.Equal(b[:n], c.pdu) {
				t.Fatalf("put\n% x\nwant\n% x", b[:n], c.pdu)
			}
		})
	}
}

func TestGoldenTermReq(t *testing.T) {
	b := make([]byte, 152)
	n := PutTermReq(b, TypeC2HTermReq, &Error{FES: FESInvalidHeaderField, FEI: 2}, goldenC2HTermReq[24:])
	if !bytes.Equal(b[:n], goldenC2HTermReq) {
		t.Fatalf("PutTermReq\n% x\nwant\n% x", b[:n], goldenC2HTermReq)
	}
	h, _ := ParseCommonHeader(b)
	f, err := h.Frame(Limits{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseTermReq(b[:n], f)
	if err != nil || r.FES != 1 || r.FEI != 2 || !bytes.Equal(r.Data, goldenC2HTermReq[24:]) {
		t.Fatalf("%+v %v", r, err)
	}
	// FEI is reserved for other FES values.
	n = PutTermReq(b, TypeC2HTermReq, &Error{FES: FESHeaderDigestError, FEI: 9}, nil)
	if n != 24 || binary.LittleEndian.Uint32(b[10:]) != 0 || b[8] != 3 {
		t.Fatalf("% x", b[:n])
	}
	// At most 128 bytes of the header in error.
	if n = PutTermReq(b, TypeC2HTermReq, &Error{FES: 2}, make([]byte, 200)); n != 152 {
		t.Fatalf("PLEN %d", n)
	}
}

// TestFrameRejects: each malformed header gets the FES (and FEI) a
// controller must send in its C2HTermReq.
func TestFrameRejects(t *testing.T) {
	dg := Digests{Header: true, Data: true}
	cases := []struct {
		name string
		h    CommonHeader
		l    Limits
		fes  uint16
		fei  uint32
	}{
		{"unknown type", CommonHeader{Type: 0x08, HLen: 24, PLen: 24}, Limits{}, FESInvalidHeaderField, 0},
		{"bad HLEN", CommonHeader{Type: TypeCapsuleCmd, HLen: 71, PLen: 72}, Limits{}, FESInvalidHeaderField, 2},
		{"HDGSTF not negotiated", CommonHeader{Type: TypeCapsuleCmd, Flags: FlagHDGSTF, HLen: 72, PLen: 76}, Limits{}, FESInvalidHeaderField, 1},
		{"HDGSTF missing", CommonHeader{Type: TypeCapsuleCmd, HLen: 72, PLen: 72}, Limits{Digests: dg}, FESInvalidHeaderField, 1},
		{"DDGSTF missing", CommonHeader{Type: TypeCapsuleCmd, Flags: FlagHDGSTF, HLen: 72, PDO: 76, PLen: 80}, Limits{Digests: dg, MaxData: 8}, FESInvalidHeaderField, 1},
		{"digest on ICReq", CommonHeader{Type: TypeICReq, Flags: FlagHDGSTF, HLen: 128, PLen: 132}, Limits{}, FESInvalidHeaderField, 1},
		{"PLEN short", CommonHeader{Type: TypeCapsuleCmd, HLen: 72, PLen: 71}, Limits{}, FESInvalidHeaderField, 4},
		{"PLEN huge", CommonHeader{Type: TypeCapsuleCmd, HLen: 72, PDO: 72, PLen: 0xffffffff}, Limits{MaxData: 8192}, FESInvalidHeaderField, 4},
		{"data on R2T", CommonHeader{Type: TypeR2T, HLen: 24, PDO: 24, PLen: 28}, Limits{MaxData: 8}, FESInvalidHeaderField, 4},
		{"bad PDO", CommonHeader{Type: TypeCapsuleCmd, HLen: 72, PDO: 80, PLen: 88}, Limits{MaxData: 8192}, FESInvalidHeaderField, 3},
		{"PDO not aligned", CommonHeader{Type: TypeH2CData, HLen: 24, PDO: 24, PLen: 64}, Limits{Align: 32, MaxData: 8192}, FESInvalidHeaderField, 3},
		{"PDO past PLEN", CommonHeader{Type: TypeH2CData, HLen: 24, PDO: 24, PLen: 26}, Limits{Align: 32, MaxData: 8192}, FESInvalidHeaderField, 3},
		{"H2CData over MAXH2CDATA", CommonHeader{Type: TypeH2CData, HLen: 24, PDO: 24, PLen: 24 + 8192}, Limits{MaxData: 4096}, FESDataLimitExceeded, 4},
		{"TermReq too long", CommonHeader{Type: TypeH2CTermReq, HLen: 24, PLen: 153}, Limits{}, FESInvalidHeaderField, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.h.Frame(c.l)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v, want *Error", err)
			}
			if e.FES != c.fes || e.FEI != c.fei {
				t.Fatalf("%v: FES %d FEI %d, want FES %d FEI %d", e, e.FES, e.FEI, c.fes, c.fei)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	icreq := func(f func(b []byte)) []byte {
		b := bytes.Clone(goldenICReq)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		fes  uint16
		fei  uint32
	}{
		{"PFV 1", icreq(func(b []byte) { b[8] = 1 }), FESUnsupportedParam, 8},
		{"HPDA 32", icreq(func(b []byte) { b[10] = 32 }), FESInvalidHeaderField, 10},
		{"PLEN 129", icreq(func(b []byte) { b[4] = 129 }), FESInvalidHeaderField, 4},
		{"short", goldenICReq[:100], FESInvalidHeaderField, 4},
		{"CapsuleCmd", goldenCapsuleCmd, FESInvalidHeaderField, 0},
	} {
		_, err := ParseICReq(c.b)
		var e *Error
		if !errors.As(err, &e) || e.FES != c.fes || e.FEI != c.fei {
			t.Errorf("%s: %v, want FES %d FEI %d", c.name, err, c.fes, c.fei)
		}
	}
	resp := bytes.Clone(goldenICResp)
	resp[12], resp[13], resp[14] = 0, 0x08, 0 // MAXH2CDATA 2048
	if _, err := ParseICResp(resp); err == nil {
		t.Error("ICResp MAXH2CDATA 2048 accepted")
	}

	data := func(f func(b []byte)) []byte {
		b := bytes.Clone(goldenC2HData)
		f(b)
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		fes  uint16
		fei  uint32
	}{
		{"DATAL mismatch", data(func(b []byte) { b[16] = 9 }), FESInvalidHeaderField, 16},
		{"SUCCESS without LAST", data(func(b []byte) { b[1] = FlagSuccess }), FESInvalidHeaderField, 1},
		{"DATAO wraps", data(func(b []byte) { b[12], b[13], b[14], b[15] = 0xff, 0xff, 0xff, 0xff }), FESDataOutOfRange, 12},
	} {
		h, _ := ParseCommonHeader(c.b)
		f, err := h.Frame(Limits{MaxData: 4096})
		if err == nil {
			_, err = ParseData(c.b, f)
		}
		var e *Error
		if !errors.As(err, &e) || e.FES != c.fes || e.FEI != c.fei {
			t.Errorf("%s: %v, want FES %d FEI %d", c.name, err, c.fes, c.fei)
		}
	}

	d := DataHeader{DATAO: 4096, DATAL: 4096}
	if d.InWindow(4096, 4096) != nil || d.InWindow(0, 8192) != nil {
		t.Error("in-window data refused")
	}
	for _, w := range [][2]uint32{{0, 4096}, {4097, 8192}, {8192, 1 << 31}, {0xffffffff, 0xffffffff}} {
		var e *Error
		if err := d.InWindow(w[0], w[1]); !errors.As(err, &e) || e.FES != FESDataOutOfRange {
			t.Errorf("window %v: %v", w, err)
		}
	}

	hdr := bytes.Clone(goldenCapsuleResp)
	hdr = append(hdr, 0, 0, 0, 0)
	PutHeaderDigest(hdr, 24)
	hdr[10] ^= 1
	var e *Error
	if err := CheckHeaderDigest(hdr, 24); !errors.As(err, &e) || e.FES != FESHeaderDigestError {
		t.Fatalf("corrupt header: %v", err)
	}
}
