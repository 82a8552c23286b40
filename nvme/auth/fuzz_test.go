package auth

import (
	"bytes"
	"reflect"
	"testing"
)

// Fuzz targets, one per parser plus one per state machine. `go test` runs
// the seeds; run one with
//
//	go test -run='^$' -fuzz='^FuzzParseReply$' -fuzztime=60s ./nvme/auth/

func FuzzParseNegotiate(f *testing.F) {
	f.Add(goldenNegotiate())
	f.Add(goldenNegotiate()[:8])
	f.Add(append(goldenNegotiate(), goldenNegotiate()[8:]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseNegotiate(b)
		if err != nil {
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("parsed %+v does not marshal: %v", m, err)
		}
		m2, err := ParseNegotiate(out)
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %+v / %+v, %v", m, m2, err)
		}
	})
}

func FuzzParseChallenge(f *testing.F) {
	f.Add(goldenChallenge())
	f.Add(goldenChallenge()[:16])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseChallenge(b)
		if err != nil {
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("re-marshal of %x: %v", b, err)
		}
		if m2, err := ParseChallenge(out); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseReply(f *testing.F) {
	f.Add(goldenReply())
	u, _ := (&Reply{TID: 1, R: seq(32, 1)}).Marshal()
	f.Add(u)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseReply(b)
		if err != nil {
			return
		}
		if len(m.R) != len(m.C) || len(b) < ReplySize+2*len(m.R)+len(m.DHV) {
			t.Fatalf("parsed %+v from %d bytes", m, len(b))
		}
		if !m.CValid {
			m.C = nil // Marshal sends zeroes
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		if _, err := ParseReply(out); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzParseSuccess1(f *testing.F) {
	f.Add(goldenSuccess1())
	f.Add(goldenSuccess1()[:16])
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSuccess1(b)
		if err != nil {
			return
		}
		if m.RValid && len(m.R) != int(m.HL) || !m.RValid && m.R != nil {
			t.Fatalf("parsed %+v", m)
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if m2, err := ParseSuccess1(out); err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip %+v %+v %v", m, m2, err)
		}
	})
}

func FuzzParseSuccess2(f *testing.F) {
	f.Add(MarshalSuccess2(3))
	f.Fuzz(func(t *testing.T, b []byte) {
		tid, err := ParseSuccess2(b)
		if err == nil && (b[0] != byte(TypeDHCHAP) || b[1] != byte(MsgSuccess2) || tid != uint16(b[4])|uint16(b[5])<<8) {
			t.Fatalf("%x parsed as T_ID %d", b, tid)
		}
	})
}

func FuzzParseFailure(f *testing.F) {
	f.Add((&Failure{ID: MsgFailure1, TID: 2, Reason: 1, Expl: ExplFailed}).Marshal())
	f.Add([]byte{0x01, 0xF0, 0, 0, 5, 0, 1, 7})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseFailure(b)
		if err != nil {
			return
		}
		if m2, err := ParseFailure(m.Marshal()); err != nil || m2 != m {
			t.Fatalf("round trip %+v %+v %v", m, m2, err)
		}
		_ = m.Error()
	})
}

func FuzzParseSecret(f *testing.F) {
	for hh := HashNone; hh <= HashSHA512; hh++ {
		for _, n := range []int{32, 48, 64} {
			f.Add(secretN(byte(n), hh, n).Encode())
		}
	}
	f.Add("DHHC-1:00:AAAA:")
	f.Add("DHHC-1:03:" + "////")
	f.Fuzz(func(t *testing.T, s string) {
		sec, err := ParseSecret(s)
		if err != nil {
			return
		}
		if err := sec.Validate(); err != nil {
			t.Fatalf("parsed invalid secret: %v", err)
		}
		again, err := ParseSecret(sec.Encode())
		if err != nil || again.Transform != sec.Transform || !bytes.Equal(again.Key, sec.Key) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// FuzzController feeds arbitrary Authentication Send data to a controller
// after a valid AUTH_Negotiate and challenge: it never panics, never
// authenticates, and always has an answer for the next Receive.
func FuzzController(f *testing.F) {
	s := secretN(1, HashNone, 32)
	f.Add(byte(0), goldenReply())
	f.Add(byte(1), goldenReply())
	f.Add(byte(0), MarshalSuccess2(4))
	f.Add(byte(0), goldenNegotiate())
	f.Add(byte(1), (&Failure{ID: MsgFailure2, TID: 4, Reason: 1, Expl: 1}).Marshal())
	f.Fuzz(func(t *testing.T, sel byte, b []byte) {
		// ffdhe2048 for one selector value (the seeds use it): each such
		// execution generates a 2048-bit DH key pair, which would otherwise
		// hold the fuzzer to about a thousand executions a second.
		groups := []DHGroupID{DHNull}
		if sel == 1 {
			groups = []DHGroupID{FFDHE2048}
		}
		c, err := NewController(ControllerConfig{HostNQN: tHostNQN, SubNQN: tSubNQN, Secret: s, DHGroups: groups})
		if err != nil {
			t.Fatal(err)
		}
		neg, _ := (&Negotiate{TID: 4, Protocols: []Protocol{{AuthID: 1, Hashes: AllHashes, DHGroups: AllDHGroups}}}).Marshal()
		if err := c.Send(neg); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Receive(); err != nil {
			t.Fatal(err)
		}
		c.Send(b)
		if c.Authenticated() {
			t.Fatalf("authenticated by %x", b)
		}
		out, err := c.Receive()
		if err != nil && err != ErrState {
			t.Fatal(err)
		}
		if err == nil {
			if _, err := ParseHeader(out); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzHost feeds an arbitrary challenge to a host: it never panics and
// answers with a well-formed Reply or AUTH_Failure2 (or nothing, for the
// controller's AUTH_Failure1).
func FuzzHost(f *testing.F) {
	s := secretN(1, HashNone, 32)
	f.Add(goldenChallenge())
	c := Challenge{TID: 4, Hash: HashSHA256, DHGroup: DHNull, SeqNum: 1, C: seq(32, 0)}
	b, _ := c.Marshal()
	f.Add(b)
	f.Add((&Failure{ID: MsgFailure1, TID: 4, Reason: 1, Expl: 4}).Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := NewHost(HostConfig{HostNQN: tHostNQN, SubNQN: tSubNQN, Secret: s, DHGroups: []DHGroupID{DHNull, FFDHE2048}}, 4)
		if err != nil {
			t.Fatal(err)
		}
		h.Negotiate()
		out, err := h.Challenge(b)
		if out == nil {
			if err == nil {
				t.Fatal("no reply and no error")
			}
			return
		}
		if err != nil {
			if f, perr := ParseFailure(out); perr != nil || f.ID != MsgFailure2 {
				t.Fatalf("error %v answered with %x", err, out)
			}
			return
		}
		if _, err := ParseReply(out); err != nil {
			t.Fatalf("reply %x: %v", out, err)
		}
	})
}
