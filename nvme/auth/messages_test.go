package auth

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// Golden bytes, assembled by hand from the layouts in NVMe Base 2.0
// §8.13.5 (Figures "AUTH_Negotiate", "DH-HMAC-CHAP_Challenge", ...) and
// Linux include/linux/nvme.h struct nvmf_auth_*.

func seq(n int, start byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = start + byte(i)
	}
	return b
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func goldenNegotiate() []byte {
	d := make([]byte, 64)
	d[0] = 0x01             // AUTHID DH-HMAC-CHAP
	d[2], d[3] = 0x03, 0x06 // HALEN, DHLEN
	copy(d[4:], []byte{1, 2, 3})
	copy(d[34:], []byte{0, 1, 2, 3, 4, 5})
	return cat([]byte{
		0x00, 0x00, // AUTH_Type common, AUTH_Id negotiate
		0x00, 0x00, // reserved
		0x34, 0x12, // T_ID 0x1234
		0x00, // SC_C
		0x01, // NAPD
	}, d)
}

func TestNegotiateGolden(t *testing.T) {
	m := Negotiate{TID: 0x1234, Protocols: []Protocol{{AuthID: 1, Hashes: AllHashes, DHGroups: AllDHGroups}}}
	b, err := m.Marshal()
	if err != nil || !bytes.Equal(b, goldenNegotiate()) {
		t.Fatalf("Marshal = %x, %v\nwant     %x", b, err, goldenNegotiate())
	}
	got, err := ParseNegotiate(append(goldenNegotiate(), 0, 0, 0)) // trailing padding ignored
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
}

func goldenChallenge() []byte {
	return cat([]byte{
		0x01, 0x01, // AUTH_Type DH-HMAC-CHAP, AUTH_Id challenge
		0x00, 0x00,
		0x02, 0x00, // T_ID 2
		0x20, 0x00, // HL 32, reserved
		0x01, 0x01, // HASHID SHA-256, DHGID ffdhe2048
		0x03, 0x00, // DHVLEN 3 (shortened for the test)
		0x78, 0x56, 0x34, 0x12, // SEQNUM 0x12345678
	}, seq(32, 0x40), []byte{0xA, 0xB, 0xC})
}

func TestChallengeGolden(t *testing.T) {
	m := Challenge{TID: 2, Hash: HashSHA256, DHGroup: FFDHE2048, SeqNum: 0x12345678, C: seq(32, 0x40), DHV: []byte{0xA, 0xB, 0xC}}
	b, err := m.Marshal()
	if err != nil || !bytes.Equal(b, goldenChallenge()) {
		t.Fatalf("Marshal = %x, %v\nwant     %x", b, err, goldenChallenge())
	}
	got, err := ParseChallenge(append(goldenChallenge(), make([]byte, 100)...))
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
}

func goldenReply() []byte {
	return cat([]byte{
		0x01, 0x02, // DH-HMAC-CHAP, reply
		0x00, 0x00,
		0xFF, 0xFF, // T_ID 0xFFFF
		0x30, 0x00, // HL 48
		0x01, 0x00, // CVALID, reserved
		0x02, 0x00, // DHVLEN 2
		0x01, 0x00, 0x00, 0x80, // SEQNUM 0x80000001
	}, seq(48, 0x00), seq(48, 0x80), []byte{0xEE, 0xFF})
}

func TestReplyGolden(t *testing.T) {
	m := Reply{TID: 0xFFFF, R: seq(48, 0), CValid: true, C: seq(48, 0x80), SeqNum: 0x80000001, DHV: []byte{0xEE, 0xFF}}
	b, err := m.Marshal()
	if err != nil || !bytes.Equal(b, goldenReply()) {
		t.Fatalf("Marshal = %x, %v\nwant     %x", b, err, goldenReply())
	}
	got, err := ParseReply(goldenReply())
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	// Unidirectional: C is all zeroes, CVALID and SEQNUM 0.
	u := Reply{TID: 1, R: seq(32, 1)}
	b, _ = u.Marshal()
	want := cat([]byte{1, 2, 0, 0, 1, 0, 32, 0, 0, 0, 0, 0, 0, 0, 0, 0}, seq(32, 1), make([]byte, 32))
	if !bytes.Equal(b, want) {
		t.Fatalf("unidirectional Marshal = %x\nwant %x", b, want)
	}
}

func goldenSuccess1() []byte {
	return cat([]byte{
		0x01, 0x03, // DH-HMAC-CHAP, Success1
		0x00, 0x00,
		0x07, 0x00, // T_ID 7
		0x40, 0x00, // HL 64
		0x01,                                     // RVALID
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // reserved
	}, seq(64, 0x10))
}

func TestSuccess1Golden(t *testing.T) {
	m := Success1{TID: 7, HL: 64, RValid: true, R: seq(64, 0x10)}
	b, err := m.Marshal()
	if err != nil || !bytes.Equal(b, goldenSuccess1()) {
		t.Fatalf("Marshal = %x, %v", b, err)
	}
	got, err := ParseSuccess1(goldenSuccess1())
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	// Without RVALID the response field is not needed.
	got, err = ParseSuccess1(goldenSuccess1()[:16:16])
	if err == nil {
		t.Fatal("RVALID Success1 without its response parsed")
	}
	short := append([]byte(nil), goldenSuccess1()[:16]...)
	short[8] = 0
	if got, err = ParseSuccess1(short); err != nil || got.RValid || got.R != nil {
		t.Fatalf("Success1 without RVALID: %+v, %v", got, err)
	}
}

func TestSuccess2Golden(t *testing.T) {
	want := []byte{0x01, 0x04, 0, 0, 0x09, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	if b := MarshalSuccess2(9); !bytes.Equal(b, want) {
		t.Fatalf("Marshal = %x", b)
	}
	if tid, err := ParseSuccess2(want); err != nil || tid != 9 {
		t.Fatalf("Parse = %d, %v", tid, err)
	}
}

func TestFailureGolden(t *testing.T) {
	f1 := []byte{0x00, 0xF1, 0, 0, 0x05, 0x00, 0x01, 0x04} // Failure1, T_ID 5, reason 1, hash unusable
	f := Failure{ID: MsgFailure1, TID: 5, Reason: ReasonFailed, Expl: ExplHashUnusable}
	if b := f.Marshal(); !bytes.Equal(b, f1) {
		t.Fatalf("Marshal = %x", b)
	}
	if got, err := ParseFailure(f1); err != nil || got != f {
		t.Fatalf("Parse = %+v, %v", got, err)
	}
	f2 := []byte{0x01, 0xF0, 0, 0, 0x05, 0x00, 0x01, 0x07} // old Linux: Failure2 with type 01h
	if got, err := ParseFailure(f2); err != nil || got.ID != MsgFailure2 || got.Expl != ExplIncorrectMessage {
		t.Fatalf("Parse(old Failure2) = %+v, %v", got, err)
	}
}

// Every parser rejects truncation at every length with a *ProtocolError
// and never reads past its input.
func TestParsersTruncated(t *testing.T) {
	cases := []struct {
		name  string
		b     []byte
		parse func([]byte) error
	}{
		{"negotiate", goldenNegotiate(), func(b []byte) error { _, err := ParseNegotiate(b); return err }},
		{"challenge", goldenChallenge(), func(b []byte) error { _, err := ParseChallenge(b); return err }},
		{"reply", goldenReply(), func(b []byte) error { _, err := ParseReply(b); return err }},
		{"success1", goldenSuccess1(), func(b []byte) error { _, err := ParseSuccess1(b); return err }},
		{"success2", MarshalSuccess2(1), func(b []byte) error { _, err := ParseSuccess2(b); return err }},
		{"failure", (&Failure{ID: MsgFailure1, Reason: 1, Expl: 1}).Marshal(), func(b []byte) error { _, err := ParseFailure(b); return err }},
	}
	for _, c := range cases {
		if err := c.parse(c.b); err != nil {
			t.Fatalf("%s: full message: %v", c.name, err)
		}
		for n := 0; n < len(c.b); n++ {
			err := c.parse(c.b[:n:n])
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("%s truncated to %d: err %v, want *ProtocolError", c.name, n, err)
			}
		}
	}
}

func TestNegotiateBadLists(t *testing.T) {
	b := goldenNegotiate()
	b[8+2] = 31 // HALEN > 30
	if _, err := ParseNegotiate(b); !isExpl(err, ExplIncorrectPayload) {
		t.Fatalf("HALEN 31: %v", err)
	}
	b = goldenNegotiate()
	b[7] = 2 // NAPD 2, only one descriptor present
	if _, err := ParseNegotiate(b); !isExpl(err, ExplIncorrectPayload) {
		t.Fatalf("NAPD beyond buffer: %v", err)
	}
	b = goldenChallenge()
	b[1] = byte(MsgReply)
	if _, err := ParseChallenge(b); !isExpl(err, ExplIncorrectMessage) {
		t.Fatalf("wrong AUTH_Id: %v", err)
	}
}

func isExpl(err error, x Explanation) bool {
	var pe *ProtocolError
	return errors.As(err, &pe) && pe.Expl == x
}
