package auth

import (
	"bytes"
	"errors"
	"fmt"
	"math/big"
	"testing"
)

const (
	tHostNQN = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
	tSubNQN  = "nqn.2024-01.io.rdmablk:vol1"
)

func secretN(b byte, hh HashID, n int) Secret {
	return Secret{Transform: hh, Key: bytes.Repeat([]byte{b}, n)}
}

func pair(t *testing.T, hc HostConfig, cc ControllerConfig, tid uint16) (*Host, *Controller) {
	t.Helper()
	if hc.HostNQN == "" {
		hc.HostNQN, hc.SubNQN = tHostNQN, tSubNQN
	}
	if cc.HostNQN == "" {
		cc.HostNQN, cc.SubNQN = tHostNQN, tSubNQN
	}
	h, err := NewHost(hc, tid)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewController(cc)
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// run drives a whole transaction the way a transport would and returns
// the first failure seen by the host (err) and the controller's state.
func run(t *testing.T, h *Host, c *Controller) error {
	t.Helper()
	neg, err := h.Negotiate()
	if err != nil {
		t.Fatal(err)
	}
	c.Send(neg)
	chal, err := c.Receive()
	if err != nil {
		t.Fatalf("controller Receive: %v", err)
	}
	reply, err := h.Challenge(chal)
	if err != nil {
		if reply != nil {
			c.Send(reply)
		}
		return err
	}
	c.Send(reply)
	s1, err := c.Receive()
	if err != nil {
		t.Fatalf("controller Receive: %v", err)
	}
	s2, err := h.Success1(s1)
	if s2 != nil {
		if cerr := c.Send(s2); cerr != nil && err == nil {
			t.Fatalf("controller refused Success2: %v", cerr)
		}
	}
	return err
}

func wantFailure(t *testing.T, err error, id MessageID, x Explanation) {
	t.Helper()
	var f *Failure
	var pe *ProtocolError
	switch {
	case errors.As(err, &f):
		if f.ID != id || f.Expl != x {
			t.Fatalf("got %v, want %v %v", err, id, x)
		}
	case errors.As(err, &pe):
		if id != MsgFailure2 || pe.Expl != x {
			t.Fatalf("got %v, want %v %v", err, id, x)
		}
	default:
		t.Fatalf("got %v, want %v %v", err, id, x)
	}
}

// TestAllCombinations: every hash × DH group, unidirectional and
// bidirectional, host ↔ controller.
func TestAllCombinations(t *testing.T) {
	for _, hash := range AllHashes {
		for _, g := range AllDHGroups {
			for _, bidi := range []bool{false, true} {
				t.Run(fmt.Sprintf("%v/%v/bidi=%v", hash, g, bidi), func(t *testing.T) {
					hs, cs := secretN(1, hash, hash.Size()), secretN(2, HashNone, 48)
					hc := HostConfig{Secret: hs}
					cc := ControllerConfig{Secret: hs, CtrlSecret: &cs, Hashes: []HashID{hash}, DHGroups: []DHGroupID{g}}
					if bidi {
						hc.CtrlSecret = &cs
					}
					h, c := pair(t, hc, cc, 3)
					if err := run(t, h, c); err != nil {
						t.Fatal(err)
					}
					if !h.Authenticated() || !c.Authenticated() || c.Failed() {
						t.Fatalf("host %v controller %v failed %v", h.Authenticated(), c.Authenticated(), c.Err())
					}
					if h.Hash() != hash || c.Hash() != hash || h.DHGroup() != g || c.DHGroup() != g {
						t.Fatalf("negotiated %v/%v and %v/%v", h.Hash(), h.DHGroup(), c.Hash(), c.DHGroup())
					}
					if (g == DHNull) != (h.SessionKey() == nil) || !bytes.Equal(h.SessionKey(), c.SessionKey()) {
						t.Fatal("session keys differ")
					}
				})
			}
		}
	}
}

func TestTransformedSecrets(t *testing.T) {
	for hh := HashNone; hh <= HashSHA512; hh++ {
		for _, n := range []int{32, 48, 64} {
			hs, cs := secretN(byte(n), hh, n), secretN(byte(n+1), hh, n)
			h, c := pair(t, HostConfig{Secret: hs, CtrlSecret: &cs}, ControllerConfig{Secret: hs, CtrlSecret: &cs}, 1)
			if err := run(t, h, c); err != nil || !c.Authenticated() {
				t.Fatalf("hh %v len %d: %v", hh, n, err)
			}
		}
	}
}

// TestWrongHostSecret: the controller refuses with AUTH_Failure1
// "authentication failed"; nothing is authenticated.
func TestWrongHostSecret(t *testing.T) {
	for _, g := range []DHGroupID{DHNull, FFDHE2048} {
		h, c := pair(t, HostConfig{Secret: secretN(1, HashSHA256, 32)},
			ControllerConfig{Secret: secretN(9, HashSHA256, 32), DHGroups: []DHGroupID{g}}, 1)
		err := run(t, h, c)
		wantFailure(t, err, MsgFailure1, ExplFailed)
		if h.Authenticated() || c.Authenticated() || !c.Failed() {
			t.Fatal("authenticated with a wrong secret")
		}
		// The host learned the truth from AUTH_Failure1: nothing left to send.
		if out, err := h.Success1(MarshalSuccess2(1)); err != ErrState || out != nil {
			t.Fatalf("host after failure: %x %v", out, err)
		}
	}
}

// TestTransformNQNMatters: same key, but the controller believes in a
// different host NQN → the transformed keys differ → refused.
func TestTransformNQNMatters(t *testing.T) {
	s := secretN(1, HashSHA384, 48)
	h, c := pair(t, HostConfig{Secret: s}, ControllerConfig{HostNQN: tHostNQN + "x", SubNQN: tSubNQN, Secret: s}, 1)
	wantFailure(t, run(t, h, c), MsgFailure1, ExplFailed)
}

// TestWrongCtrlSecret: the host refuses the controller with AUTH_Failure2
// and the controller, told so, is not authenticated.
func TestWrongCtrlSecret(t *testing.T) {
	hs, good, bad := secretN(1, HashNone, 32), secretN(2, HashNone, 32), secretN(3, HashNone, 32)
	h, c := pair(t, HostConfig{Secret: hs, CtrlSecret: &bad}, ControllerConfig{Secret: hs, CtrlSecret: &good}, 1)
	err := run(t, h, c)
	wantFailure(t, err, MsgFailure2, ExplFailed)
	if h.Authenticated() || c.Authenticated() || !c.Failed() {
		t.Fatal("authenticated with a wrong controller secret")
	}
	var f *Failure
	if !errors.As(c.Err(), &f) || f.ID != MsgFailure2 || f.Expl != ExplFailed {
		t.Fatalf("controller saw %v", c.Err())
	}
}

func TestNoCtrlSecretOnController(t *testing.T) {
	hs, cs := secretN(1, HashNone, 32), secretN(2, HashNone, 32)
	h, c := pair(t, HostConfig{Secret: hs, CtrlSecret: &cs}, ControllerConfig{Secret: hs}, 1)
	wantFailure(t, run(t, h, c), MsgFailure1, ExplFailed)
	if c.Authenticated() {
		t.Fatal("authenticated")
	}
}

// TestControllerRefusesNegotiate: bad AUTH_Negotiate → the next
// Authentication Receive is AUTH_Failure1 with the right explanation.
func TestControllerRefusesNegotiate(t *testing.T) {
	base := func() []byte { return goldenNegotiate() }
	cases := []struct {
		name string
		b    []byte
		x    Explanation
	}{
		{"unknown hashes", func() []byte { b := base(); b[8+2] = 2; b[8+4], b[8+5] = 0, 7; return b }(), ExplHashUnusable},
		{"no hashes", func() []byte { b := base(); b[8+2] = 0; return b }(), ExplHashUnusable},
		{"unknown DH groups", func() []byte { b := base(); b[8+3] = 1; b[8+34] = 9; return b }(), ExplDHGroupUnusable},
		{"HALEN 31", func() []byte { b := base(); b[8+2] = 31; return b }(), ExplIncorrectPayload},
		{"truncated", base()[:40], ExplIncorrectPayload},
		{"NAPD 0", func() []byte { b := base(); b[7] = 0; return b }(), ExplIncorrectPayload},
		{"AUTHID 2", func() []byte { b := base(); b[8] = 2; return b }(), ExplNotUsable},
		{"SC_C 1", func() []byte { b := base(); b[6] = 1; return b }(), ExplConcatMismatch},
		{"header only", base()[:5], ExplIncorrectPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c := pair(t, HostConfig{Secret: secretN(1, 0, 32)}, ControllerConfig{Secret: secretN(1, 0, 32)}, 1)
			if err := c.Send(tc.b); !isExpl(err, tc.x) {
				t.Fatalf("Send: %v, want %v", err, tc.x)
			}
			checkFailure1(t, c, tc.x)
		})
	}
}

func checkFailure1(t *testing.T, c *Controller, x Explanation) {
	t.Helper()
	if !c.Failed() || c.Authenticated() {
		t.Fatal("controller not failed")
	}
	out, err := c.Receive()
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFailure(out)
	if err != nil || f.ID != MsgFailure1 || f.Reason != ReasonFailed || f.Expl != x {
		t.Fatalf("got %+v, %v; want Failure1 %v", f, err, x)
	}
	if _, err := c.Receive(); err != ErrState {
		t.Fatalf("Receive after Failure1: %v", err)
	}
	if err := c.Send(goldenNegotiate()); err != ErrState {
		t.Fatalf("Send after Failure1: %v", err)
	}
}

// reply runs Negotiate and Challenge and returns the host's reply bytes.
func toReply(t *testing.T, hc HostConfig, cc ControllerConfig) (*Host, *Controller, []byte) {
	t.Helper()
	h, c := pair(t, hc, cc, 4)
	neg, _ := h.Negotiate()
	if err := c.Send(neg); err != nil {
		t.Fatal(err)
	}
	chal, _ := c.Receive()
	r, err := h.Challenge(chal)
	if err != nil {
		t.Fatal(err)
	}
	return h, c, r
}

func TestControllerRefusesReply(t *testing.T) {
	s := secretN(1, HashSHA256, 32)
	nullCfg := ControllerConfig{Secret: s, DHGroups: []DHGroupID{DHNull}}
	dhCfg := ControllerConfig{Secret: s, DHGroups: []DHGroupID{FFDHE2048}}
	p := ffdheGroups[FFDHE2048].p
	n := FFDHE2048.DHPublicSize()
	withDHV := func(v []byte) func([]byte) []byte {
		return func(b []byte) []byte { return append(b[:16+64:16+64], v...) } // DHVLEN unchanged: same length
	}
	cases := []struct {
		name   string
		cc     ControllerConfig
		mangle func([]byte) []byte
		x      Explanation
	}{
		{"wrong response", nullCfg, func(b []byte) []byte { b[16] ^= 1; return b }, ExplFailed},
		{"truncated", nullCfg, func(b []byte) []byte { return b[:30] }, ExplIncorrectPayload},
		{"HL 48", nullCfg, func(b []byte) []byte { b[6] = 48; return append(b, make([]byte, 32)...) }, ExplIncorrectPayload},
		{"DH value with null group", nullCfg, func(b []byte) []byte { b[10] = 1; return append(b, 5) }, ExplIncorrectPayload},
		{"wrong T_ID", nullCfg, func(b []byte) []byte { b[4]++; return b }, ExplIncorrectPayload},
		{"wrong message", nullCfg, func(b []byte) []byte { b[1] = byte(MsgSuccess2); return b }, ExplIncorrectMessage},
		{"wrong type", nullCfg, func(b []byte) []byte { b[0] = 7; return b }, ExplIncorrectMessage},
		{"DH 0", dhCfg, withDHV(make([]byte, n)), ExplDHGroupUnusable},
		{"DH 1", dhCfg, withDHV(big.NewInt(1).FillBytes(make([]byte, n))), ExplDHGroupUnusable},
		{"DH p-1", dhCfg, withDHV(new(big.Int).Sub(p, big.NewInt(1)).FillBytes(make([]byte, n))), ExplDHGroupUnusable},
		{"DH p", dhCfg, withDHV(p.FillBytes(make([]byte, n))), ExplDHGroupUnusable},
		{"DH missing", dhCfg, func(b []byte) []byte { b[10], b[11] = 0, 0; return b[:16+64] }, ExplIncorrectPayload},
		{"DH long", dhCfg, func(b []byte) []byte { b[10], b[11] = 0x01, 0x01; return append(b, 7) }, ExplDHGroupUnusable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, c, r := toReply(t, HostConfig{Secret: s}, tc.cc)
			if err := c.Send(tc.mangle(r)); !isExpl(err, tc.x) {
				t.Fatalf("Send: %v, want %v", err, tc.x)
			}
			checkFailure1(t, c, tc.x)
		})
	}
}

// TestHostRefusesChallenge: a bad challenge → AUTH_Failure2 with the
// right explanation, nothing authenticated.
func TestHostRefusesChallenge(t *testing.T) {
	s := secretN(1, HashNone, 32)
	good := func(g DHGroupID) []byte {
		_, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s, DHGroups: []DHGroupID{g}}, 4)
		neg, _ := (&Negotiate{TID: 4, Protocols: []Protocol{{AuthID: 1, Hashes: AllHashes, DHGroups: AllDHGroups}}}).Marshal()
		if err := c.Send(neg); err != nil {
			t.Fatal(err)
		}
		b, _ := c.Receive()
		return b
	}
	n := FFDHE2048.DHPublicSize()
	cases := []struct {
		name   string
		hc     HostConfig
		b      []byte
		x      Explanation
		failed bool // controller's AUTH_Failure1: no Failure2
	}{
		{"hash not offered", HostConfig{Hashes: []HashID{HashSHA512}}, good(DHNull), ExplHashUnusable, false},
		{"unknown hash", HostConfig{}, func() []byte { b := good(DHNull); b[8] = 9; return b }(), ExplHashUnusable, false},
		{"HL mismatch", HostConfig{}, func() []byte { b := good(DHNull); b[6] = 20; return b }(), ExplHashUnusable, false},
		{"group not offered", HostConfig{DHGroups: []DHGroupID{DHNull}}, good(FFDHE2048), ExplDHGroupUnusable, false},
		{"unknown group", HostConfig{}, func() []byte { b := good(DHNull); b[9] = 6; return b }(), ExplDHGroupUnusable, false},
		{"no DH value", HostConfig{}, func() []byte { b := good(FFDHE2048); b[10], b[11] = 0, 0; return b[:48] }(), ExplDHGroupUnusable, false},
		{"DH value with null", HostConfig{}, func() []byte { b := good(DHNull); b[10] = 1; return append(b, 1) }(), ExplIncorrectPayload, false},
		{"DH 1", HostConfig{}, func() []byte { b := good(FFDHE2048); copy(b[48:], big.NewInt(1).FillBytes(make([]byte, n))); return b }(), ExplIncorrectPayload, false},
		{"DH 0", HostConfig{}, func() []byte { b := good(FFDHE2048); copy(b[48:], make([]byte, n)); return b }(), ExplIncorrectPayload, false},
		{"wrong T_ID", HostConfig{}, func() []byte { b := good(DHNull); b[4] = 5; return b }(), ExplIncorrectMessage, false},
		{"wrong message", HostConfig{}, func() []byte { b := good(DHNull); b[1] = byte(MsgSuccess1); return b }(), ExplIncorrectMessage, false},
		{"truncated", HostConfig{}, good(DHNull)[:20], ExplIncorrectPayload, false},
		{"Failure1", HostConfig{}, (&Failure{ID: MsgFailure1, TID: 4, Reason: 1, Expl: ExplHashUnusable}).Marshal(), ExplHashUnusable, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.hc.Secret, tc.hc.HostNQN, tc.hc.SubNQN = s, tHostNQN, tSubNQN
			h, err := NewHost(tc.hc, 4)
			if err != nil {
				t.Fatal(err)
			}
			h.Negotiate()
			out, err := h.Challenge(tc.b)
			if tc.failed {
				wantFailure(t, err, MsgFailure1, tc.x)
				if out != nil {
					t.Fatalf("answered a Failure1 with %x", out)
				}
				return
			}
			wantFailure(t, err, MsgFailure2, tc.x)
			f, perr := ParseFailure(out)
			if perr != nil || f.ID != MsgFailure2 || f.TID != 4 || f.Expl != tc.x {
				t.Fatalf("Failure2 %+v %v", f, perr)
			}
			if h.Authenticated() {
				t.Fatal("authenticated")
			}
		})
	}
}

func TestHostRefusesSuccess1(t *testing.T) {
	hs, cs := secretN(1, HashNone, 32), secretN(2, HashNone, 32)
	cases := []struct {
		name   string
		mangle func([]byte) []byte
		x      Explanation
	}{
		{"wrong response", func(b []byte) []byte { b[20] ^= 0x80; return b }, ExplFailed},
		{"no RVALID", func(b []byte) []byte { b[8] = 0; return b }, ExplFailed},
		{"HL", func(b []byte) []byte { b[6] = 48; return append(b, make([]byte, 16)...) }, ExplHashUnusable},
		{"T_ID", func(b []byte) []byte { b[5] = 1; return b }, ExplIncorrectMessage},
		{"truncated", func(b []byte) []byte { return b[:20] }, ExplIncorrectPayload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, c, r := toReply(t, HostConfig{Secret: hs, CtrlSecret: &cs}, ControllerConfig{Secret: hs, CtrlSecret: &cs, Hashes: []HashID{HashSHA256}})
			if err := c.Send(r); err != nil {
				t.Fatal(err)
			}
			s1, _ := c.Receive()
			out, err := h.Success1(tc.mangle(s1))
			wantFailure(t, err, MsgFailure2, tc.x)
			if err := c.Send(out); err == nil || !c.Failed() || c.Authenticated() {
				t.Fatalf("controller after Failure2: %v failed=%v authed=%v", err, c.Failed(), c.Authenticated())
			}
		})
	}
}

// TestReauthAndReplayedTID: re-authentication with a new T_ID works, the
// previous transaction's T_ID is refused.
func TestReauthAndReplayedTID(t *testing.T) {
	s := secretN(1, HashNone, 32)
	h, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 5)
	if err := run(t, h, c); err != nil || !c.Authenticated() {
		t.Fatal(err)
	}
	h2, _ := NewHost(HostConfig{Secret: s, HostNQN: tHostNQN, SubNQN: tSubNQN}, 6)
	if err := run(t, h2, c); err != nil || !c.Authenticated() {
		t.Fatalf("re-authentication: %v", err)
	}
	h3, _ := NewHost(HostConfig{Secret: s, HostNQN: tHostNQN, SubNQN: tSubNQN}, 6)
	neg, _ := h3.Negotiate()
	if err := c.Send(neg); !isExpl(err, ExplIncorrectPayload) {
		t.Fatalf("replayed T_ID: %v", err)
	}
	checkFailure1(t, c, ExplIncorrectPayload)
}

// TestReplayedReply: a reply recorded from one transaction does not
// authenticate another (new C1/S1), even with the same T_ID on a new
// controller.
func TestReplayedReply(t *testing.T) {
	s := secretN(1, HashNone, 32)
	_, _, r := toReply(t, HostConfig{Secret: s}, ControllerConfig{Secret: s})
	h, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 4)
	neg, _ := h.Negotiate()
	c.Send(neg)
	c.Receive()
	if err := c.Send(r); !isExpl(err, ExplFailed) {
		t.Fatalf("replayed reply: %v", err)
	}
}

func TestOutOfOrder(t *testing.T) {
	s := secretN(1, HashNone, 32)
	_, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 1)
	if err := c.Send(MarshalSuccess2(1)); !isExpl(err, ExplIncorrectMessage) {
		t.Fatalf("Success2 first: %v", err)
	}
	checkFailure1(t, c, ExplIncorrectMessage)

	_, c = pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 1)
	checkFailure1AfterReceive(t, c)

	h, _ := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 1)
	if _, err := h.Challenge(goldenChallenge()); err != ErrState {
		t.Fatalf("host Challenge before Negotiate: %v", err)
	}
	if _, err := h.Success1(goldenSuccess1()); err != ErrState {
		t.Fatalf("host Success1 before Negotiate: %v", err)
	}
}

func checkFailure1AfterReceive(t *testing.T, c *Controller) {
	t.Helper()
	out, err := c.Receive() // Receive before Negotiate
	if err != nil {
		t.Fatal(err)
	}
	if f, err := ParseFailure(out); err != nil || f.Expl != ExplFailed || !c.Failed() {
		t.Fatalf("%+v %v", f, err)
	}
}

func TestConfigErrors(t *testing.T) {
	s := secretN(1, HashNone, 32)
	bad := Secret{Transform: 5, Key: s.Key}
	if _, err := NewHost(HostConfig{Secret: bad, HostNQN: "a", SubNQN: "b"}, 0); err == nil {
		t.Fatal("bad secret accepted")
	}
	if _, err := NewHost(HostConfig{Secret: s, HostNQN: "a", SubNQN: "b", Hashes: []HashID{HashNone}}, 0); err == nil {
		t.Fatal("offering hash 0 accepted")
	}
	if _, err := NewController(ControllerConfig{Secret: s, HostNQN: "a"}); err == nil {
		t.Fatal("no subsystem NQN accepted")
	}
	if _, err := NewController(ControllerConfig{Secret: s, HostNQN: "a", SubNQN: "b", DHGroups: []DHGroupID{6}}); err == nil {
		t.Fatal("DH group 6 accepted")
	}
}

// TestReauthFailureDropsAuthentication: a failed re-authentication of an
// authenticated queue leaves it unauthenticated.
func TestReauthFailureDropsAuthentication(t *testing.T) {
	s := secretN(1, HashNone, 32)
	h, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 1)
	if err := run(t, h, c); err != nil || !c.Authenticated() {
		t.Fatal(err)
	}
	h2, _ := NewHost(HostConfig{Secret: secretN(2, HashNone, 32), HostNQN: tHostNQN, SubNQN: tSubNQN}, 2)
	neg, _ := h2.Negotiate()
	if err := c.Send(neg); err != nil || !c.Authenticated() {
		t.Fatalf("re-negotiation: %v, authenticated %v", err, c.Authenticated())
	}
	wantFailure(t, run2(t, h2, c), MsgFailure1, ExplFailed)
	if c.Authenticated() {
		t.Fatal("still authenticated after a failed re-authentication")
	}
}

// run2 continues a transaction whose AUTH_Negotiate was already sent.
func run2(t *testing.T, h *Host, c *Controller) error {
	t.Helper()
	chal, _ := c.Receive()
	reply, err := h.Challenge(chal)
	if err != nil {
		return err
	}
	c.Send(reply)
	s1, _ := c.Receive()
	_, err = h.Success1(s1)
	return err
}

// TestSeqNumIncrements: a controller's S1 grows by one per transaction.
func TestSeqNumIncrements(t *testing.T) {
	s := secretN(1, HashNone, 32)
	_, c := pair(t, HostConfig{Secret: s}, ControllerConfig{Secret: s}, 1)
	var last uint32
	for tid := uint16(1); tid <= 3; tid++ {
		h, _ := NewHost(HostConfig{Secret: s, HostNQN: tHostNQN, SubNQN: tSubNQN}, tid)
		neg, _ := h.Negotiate()
		c.Send(neg)
		b, _ := c.Receive()
		m, err := ParseChallenge(b)
		if err != nil || m.SeqNum == 0 || (tid > 1 && m.SeqNum != last+1 && !(last == 0xFFFFFFFF && m.SeqNum == 1)) {
			t.Fatalf("transaction %d: S1 %d after %d (%v)", tid, m.SeqNum, last, err)
		}
		last = m.SeqNum
		reply, err := h.Challenge(b)
		if err != nil || c.Send(reply) != nil {
			t.Fatal(err)
		}
		s1, _ := c.Receive()
		if _, err := h.Success1(s1); err != nil || !c.Authenticated() {
			t.Fatal(err)
		}
	}
}
