package tcppdu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// goldens are the seed corpus of every fuzz target (also committed under
// testdata/fuzz by TestWriteFuzzSeeds).
var goldens = [][]byte{goldenICReq, goldenICResp, goldenCapsuleCmd, goldenCapsuleResp, goldenH2CData,
	goldenC2HData, goldenR2T, goldenC2HTermReq}

// checkErr fails unless err is nil or an *Error with a defined FES.
func checkErr(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.FES < FESInvalidHeaderField || e.FES > FESUnsupportedParam {
		t.Fatalf("error without a FES: %v", err)
	}
}

// FuzzFrame: Frame never panics, every rejection names a FES, and an
// accepted layout adds up to PLEN within the limits.
func FuzzFrame(f *testing.F) {
	for _, g := range goldens {
		f.Add(g[:8], uint8(0), uint8(0), uint32(8192))
		f.Add(g[:8], uint8(3), uint8(32), uint32(4096))
	}
	f.Fuzz(func(t *testing.T, hdr []byte, dgst, align uint8, maxData uint32) {
		h, ok := ParseCommonHeader(hdr)
		if !ok {
			return
		}
		l := Limits{Digests: Digests{Header: dgst&1 != 0, Data: dgst&2 != 0}, Align: int(align), MaxData: int(maxData)}
		fr, err := h.Frame(l)
		checkErr(t, err)
		if err != nil {
			return
		}
		if fr.HeaderLen < int(h.HLen) || fr.HeaderLen > int(h.HLen)+DigestSize {
			t.Fatalf("header %d for HLEN %d", fr.HeaderLen, h.HLen)
		}
		if fr.DataLen < 0 || fr.DataLen > max(int(maxData), MaxTermReqData) {
			t.Fatalf("data %d over %d", fr.DataLen, maxData)
		}
		end := fr.HeaderLen
		if fr.DataLen > 0 {
			if fr.DataOff < fr.HeaderLen {
				t.Fatalf("data at %d inside the header (%d)", fr.DataOff, fr.HeaderLen)
			}
			end = fr.DataOff + fr.DataLen
			if fr.DataDigest {
				end += DigestSize
			}
		}
		if uint64(end) != uint64(h.PLen) {
			t.Fatalf("layout %+v ends at %d, PLEN %d", fr, end, h.PLen)
		}
	})
}

// FuzzICReq: ParseICReq never panics; what it accepts marshals back to
// the same fields.
func FuzzICReq(f *testing.F) {
	for _, g := range goldens {
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseICReq(b)
		checkErr(t, err)
		if err != nil {
			return
		}
		var out [128]byte
		r.Marshal(out[:])
		r2, err := ParseICReq(out[:])
		if err != nil || r2 != r {
			t.Fatalf("round trip %+v -> %+v, %v", r, r2, err)
		}
	})
}

// FuzzICResp: as FuzzICReq for the host's parser.
func FuzzICResp(f *testing.F) {
	for _, g := range goldens {
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseICResp(b)
		checkErr(t, err)
		if err != nil {
			return
		}
		if r.MAXH2CDATA < MinMaxH2CData || r.CPDA > 31 {
			t.Fatalf("accepted %+v", r)
		}
		var out [128]byte
		r.Marshal(out[:])
		if r2, err := ParseICResp(out[:]); err != nil || r2 != r {
			t.Fatalf("round trip %+v -> %+v, %v", r, r2, err)
		}
	})
}

// FuzzData: framing then ParseData on H2CData / C2HData / R2T headers;
// what it accepts fits in 32 bits and its window check agrees with a
// plain comparison.
func FuzzData(f *testing.F) {
	for _, g := range goldens {
		f.Add(g, uint32(0), uint32(1<<20))
	}
	f.Fuzz(func(t *testing.T, b []byte, off, n uint32) {
		h, ok := ParseCommonHeader(b)
		if !ok {
			return
		}
		fr, err := h.Frame(Limits{MaxData: 1 << 20})
		checkErr(t, err)
		if err != nil {
			return
		}
		d, err := ParseData(b, fr)
		checkErr(t, err)
		if err != nil {
			return
		}
		if uint64(d.DATAO)+uint64(d.DATAL) >= 1<<32 {
			t.Fatalf("accepted %+v", d)
		}
		in := d.InWindow(off, n) == nil
		want := uint64(d.DATAO) >= uint64(off) && uint64(d.DATAO)+uint64(d.DATAL) <= uint64(off)+uint64(n)
		if in != want {
			t.Fatalf("InWindow(%d,%d) of %+v = %v", off, n, d, in)
		}
	})
}

// FuzzTermReq: TermReq framing and parsing; Data is a copy within 128
// bytes.
func FuzzTermReq(f *testing.F) {
	for _, g := range goldens {
		f.Add(g)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok := ParseCommonHeader(b)
		if !ok {
			return
		}
		fr, err := h.Frame(Limits{})
		checkErr(t, err)
		if err != nil {
			return
		}
		r, err := ParseTermReq(b, fr)
		checkErr(t, err)
		if err != nil {
			return
		}
		if len(r.Data) > MaxTermReqData {
			t.Fatalf("%d bytes of error data", len(r.Data))
		}
		if len(r.Data) > 0 {
			r.Data[0] ^= 0xff
			if b[fr.DataOff] == r.Data[0] {
				t.Fatal("Data aliases the input")
			}
		}
	})
}

// FuzzCapsule: CapsuleCmd / CapsuleResp headers with digests: a header
// digest check never panics, and what PutCapsuleCmd builds frames and
// checks clean.
func FuzzCapsule(f *testing.F) {
	for _, g := range goldens {
		f.Add(g, uint8(3), uint16(8))
	}
	f.Fuzz(func(t *testing.T, b []byte, dgst uint8, icd uint16) {
		dg := Digests{Header: dgst&1 != 0, Data: dgst&2 != 0}
		if h, ok := ParseCommonHeader(b); ok {
			fr, err := h.Frame(Limits{Digests: dg, MaxData: 8192})
			checkErr(t, err)
			if err == nil && len(b) >= fr.HeaderLen {
				if fr.HeaderDigest {
					checkErr(t, CheckHeaderDigest(b, int(h.HLen)))
				}
				ParseCapsuleCmd(b)
				ParseCapsuleResp(b)
			}
		}
		sqe, ok := ParseCapsuleCmd(b)
		if !ok {
			return
		}
		out := make([]byte, 256)
		n := PutCapsuleCmd(out, &sqe, int(icd), dg, int(dgst>>2)*4)
		h, _ := ParseCommonHeader(out)
		fr, err := h.Frame(Limits{Digests: dg, Align: int(dgst>>2) * 4, MaxData: 1 << 16})
		if err != nil {
			if icd > 0 || int(dgst>>2)*4 <= 4 {
				t.Fatalf("own capsule (icd %d, dgst %#x) rejected: %v", icd, dgst, err)
			}
			return
		}
		if fr.DataLen != int(icd) || (icd > 0 && fr.DataOff != n) {
			t.Fatalf("own capsule %+v, icd %d, PDO %d", fr, icd, n)
		}
		if dg.Header {
			if err := CheckHeaderDigest(out, CapsuleCmdHLen); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestWriteFuzzSeeds writes the golden PDUs as committed seed corpus
// files (run with RDMABLK_WRITE_FUZZ_SEEDS=1 after changing goldens).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("RDMABLK_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("RDMABLK_WRITE_FUZZ_SEEDS not set")
	}
	write := func(target string, i int, args ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		s := "go test fuzz v1\n"
		for _, a := range args {
			s += a + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("golden-%d", i)), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q := func(b []byte) string { return fmt.Sprintf("[]byte(%q)", b) }
	for i, g := range goldens {
		write("FuzzFrame", i, q(g[:8]), "byte('\\x03')", "byte('\\x00')", "uint32(8192)")
		write("FuzzICReq", i, q(g))
		write("FuzzICResp", i, q(g))
		write("FuzzData", i, q(g), "uint32(0)", fmt.Sprintf("uint32(%d)", binary.LittleEndian.Uint32(g[4:])))
		write("FuzzTermReq", i, q(g))
		write("FuzzCapsule", i, q(g), "byte('\\x03')", "uint16(8)")
	}
}
