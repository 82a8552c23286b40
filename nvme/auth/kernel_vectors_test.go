package auth

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// kernelVectors is the schema of testdata/kernel-*.json: values captured
// in the lab from Linux (nvmet + nvme-core with dynamic debug, a packet
// capture of NVMe/TCP on lo) and nvme-cli. testdata/README.md says how to
// capture each field. Every field is optional; each check runs when its
// inputs are present. Hex strings are lower or upper case, no separators.
type kernelVectors struct {
	Source string `json:"source"` // kernel and nvme-cli versions, date, how captured

	// `nvme gen-dhchap-key --secret=<SecretHex> --hmac=<HMAC>
	//  --key-length=<KeyLength> --nqn=<NQN>` printed Output. nvme-cli 2.x
	// pre-transforms the key when HMAC > 0 (NQN matters); 3.x does not
	// (set CLI3 true).
	NVMeCLIGen []struct {
		SecretHex string `json:"secret_hex"`
		HMAC      HashID `json:"hmac"`
		KeyLength int    `json:"key_length"`
		NQN       string `json:"nqn"`
		Output    string `json:"output"`
		CLI3      bool   `json:"cli3"`
	} `json:"nvme_cli_gen"`

	// `nvme check-dhchap-key --key=<Key>` accepted it (Valid) or not.
	NVMeCLICheck []struct {
		Key   string `json:"key"`
		Valid bool   `json:"valid"`
	} `json:"nvme_cli_check"`

	Transactions []kernelTransaction `json:"transactions"`
}

type kernelTransaction struct {
	Name       string `json:"name"`
	HostNQN    string `json:"hostnqn"`
	SubNQN     string `json:"subnqn"`
	HostSecret string `json:"host_secret"` // DHHC-1 as configured (nvmet dhchap_key / --dhchap-secret)
	CtrlSecret string `json:"ctrl_secret"` // DHHC-1, bidirectional only

	// Whole message payloads from the capture (Authentication Send /
	// Receive data, hex), any subset.
	ChallengeMsg string `json:"challenge_msg"`
	ReplyMsg     string `json:"reply_msg"`
	Success1Msg  string `json:"success1_msg"`

	// Values from dmesg (dynamic debug) when no capture is available.
	Hash         HashID    `json:"hash"`
	DHGroup      DHGroupID `json:"dhgroup"`
	TID          uint16    `json:"tid"`
	S2           uint32    `json:"s2"`
	C2           string    `json:"c2"`            // host: "ctrl challenge %*ph"
	SessionKey   string    `json:"session_key"`   // host or target: "shared secret %*ph"
	AugmentedC2  string    `json:"augmented_c2"`  // host: "challenge %*ph" in setup_ctrl_response (DH only)
	R2           string    `json:"r2"`            // target: "response %*ph" in nvmet_auth_success1
	TransformedH string    `json:"transformed_h"` // optional: the transformed host key, if printed
}

func TestKernelVectors(t *testing.T) {
	files, _ := filepath.Glob("testdata/kernel-*.json")
	if len(files) == 0 {
		t.Skip("no testdata/kernel-*.json yet: capture them in the lab (testdata/README.md)")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			n, errs := checkKernelFile(file)
			for _, e := range errs {
				t.Error(e)
			}
			if n == 0 {
				t.Fatal("file has no vectors")
			}
			t.Logf("%s: %d checks", file, n)
		})
	}
}

type errList []string

func (e *errList) add(format string, a ...any) { *e = append(*e, fmt.Sprintf(format, a...)) }

func hexOr(e *errList, s string) []byte {
	if s == "" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		e.add("bad hex %q: %v", s, err)
	}
	return b
}

// checkKernelFile runs every check the file has inputs for and returns
// how many ran and what failed.
func checkKernelFile(file string) (int, []string) {
	var e errList
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, []string{err.Error()}
	}
	var v kernelVectors
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return 0, []string{err.Error()}
	}
	checked := 0
	for _, g := range v.NVMeCLIGen {
		checked++
		s, err := ParseSecret(g.Output)
		if err != nil || s.Transform != g.HMAC {
			e.add("nvme-cli output %s: %+v, %v", g.Output, s, err)
			continue
		}
		raw := Secret{Transform: g.HMAC, Key: hexOr(&e, g.SecretHex)}
		want := raw.Key
		if g.HMAC != HashNone && !g.CLI3 {
			if want, err = raw.TransformKey(g.NQN); err != nil {
				e.add("%v", err)
				continue
			}
		}
		if !bytes.Equal(s.Key, want) {
			e.add("nvme-cli %s: key %x, want %x", g.Output, s.Key, want)
		}
		if (g.HMAC == HashNone || g.CLI3) && raw.Encode() != g.Output {
			e.add("Encode() = %s, nvme-cli printed %s", raw.Encode(), g.Output)
		}
	}
	for _, c := range v.NVMeCLICheck {
		checked++
		if _, err := ParseSecret(c.Key); (err == nil) != c.Valid {
			e.add("ParseSecret(%s) = %v, nvme-cli says valid=%v", c.Key, err, c.Valid)
		}
	}
	for _, x := range v.Transactions {
		checked += checkKernelTransaction(&e, x)
	}
	return checked, e
}

func checkKernelTransaction(e *errList, x kernelTransaction) int {
	n := 0
	var hs, cs Secret
	var err error
	if x.HostSecret != "" {
		if hs, err = ParseSecret(x.HostSecret); err != nil {
			e.add("%s: host secret: %v", x.Name, err)
			return n
		}
	}
	if x.CtrlSecret != "" {
		if cs, err = ParseSecret(x.CtrlSecret); err != nil {
			e.add("%s: ctrl secret: %v", x.Name, err)
			return n
		}
	}
	sess := hexOr(e, x.SessionKey)
	var chal Challenge
	if x.ChallengeMsg != "" {
		n++
		if chal, err = ParseChallenge(hexOr(e, x.ChallengeMsg)); err != nil {
			e.add("%s: kernel challenge: %v", x.Name, err)
			return n
		}
		x.Hash, x.TID, x.DHGroup = chal.Hash, chal.TID, chal.DHGroup
	}
	var rep Reply
	if x.ReplyMsg != "" {
		n++
		if rep, err = ParseReply(hexOr(e, x.ReplyMsg)); err != nil {
			e.add("%s: kernel reply: %v", x.Name, err)
			return n
		}
		if rep.CValid {
			x.S2, x.C2 = rep.SeqNum, hex.EncodeToString(rep.C)
		}
	}
	if x.TransformedH != "" && x.HostSecret != "" {
		n++
		if k, _ := hs.TransformKey(x.HostNQN); hex.EncodeToString(k) != x.TransformedH {
			e.add("%s: transformed host key %x, kernel %s", x.Name, k, x.TransformedH)
		}
	}
	// R1: needs the challenge and the reply (and the session key with DH).
	if x.ChallengeMsg != "" && x.ReplyMsg != "" && x.HostSecret != "" && (x.DHGroup == DHNull || sess != nil) {
		n++
		kh, _ := hs.TransformKey(x.HostNQN)
		c1 := chal.C
		if chal.DHGroup != DHNull {
			c1 = AugmentedChallenge(chal.Hash, sess, c1)
		}
		if got := HostResponse(chal.Hash, kh, c1, chal.SeqNum, chal.TID, x.HostNQN, x.SubNQN); !bytes.Equal(got, rep.R) {
			e.add("%s: R1 %x, kernel %x", x.Name, got, rep.R)
		}
	}
	if x.Success1Msg != "" {
		n++
		s1, err := ParseSuccess1(hexOr(e, x.Success1Msg))
		if err != nil {
			e.add("%s: kernel Success1: %v", x.Name, err)
			return n
		}
		if s1.RValid {
			x.R2 = hex.EncodeToString(s1.R)
		}
	}
	c2 := hexOr(e, x.C2)
	if aug := hexOr(e, x.AugmentedC2); aug != nil && sess != nil && c2 != nil {
		n++
		if got := AugmentedChallenge(x.Hash, sess, c2); !bytes.Equal(got, aug) {
			e.add("%s: augmented C2 %x, kernel %x", x.Name, got, aug)
		}
	}
	// With a DH group, R2 needs the session key (see testdata/README.md).
	if x.R2 != "" && x.CtrlSecret != "" && c2 != nil && x.Hash.Valid() && (x.DHGroup == DHNull || sess != nil) {
		n++
		kc, _ := cs.TransformKey(x.SubNQN)
		c := c2
		if x.DHGroup != DHNull {
			c = AugmentedChallenge(x.Hash, sess, c2)
		}
		if got := ControllerResponse(x.Hash, kc, c, x.S2, x.TID, x.SubNQN, x.HostNQN); !bytes.Equal(got, hexOr(e, x.R2)) {
			e.add("%s: R2 %x, kernel %s", x.Name, got, x.R2)
		}
	}
	return n
}

// TestKernelVectorLoader proves the loader checks what it claims: a file
// made from our own transaction passes every check, and a flipped bit in
// each captured response is reported.
func TestKernelVectorLoader(t *testing.T) {
	for _, g := range []DHGroupID{DHNull, FFDHE2048} {
		hs, cs := secretN(3, HashSHA256, 32), secretN(4, HashSHA512, 64)
		h, c := pair(t, HostConfig{Secret: hs, CtrlSecret: &cs}, ControllerConfig{Secret: hs, CtrlSecret: &cs, DHGroups: []DHGroupID{g}}, 9)
		neg, _ := h.Negotiate()
		c.Send(neg)
		chal, _ := c.Receive()
		rep, _ := h.Challenge(chal)
		c.Send(rep)
		s1, _ := c.Receive()
		if _, err := h.Success1(s1); err != nil {
			t.Fatal(err)
		}
		x := kernelTransaction{Name: g.String(), HostNQN: tHostNQN, SubNQN: tSubNQN, HostSecret: hs.Encode(), CtrlSecret: cs.Encode(),
			ChallengeMsg: hex.EncodeToString(chal), ReplyMsg: hex.EncodeToString(rep), Success1Msg: hex.EncodeToString(s1),
			SessionKey: hex.EncodeToString(h.SessionKey())}
		gen := Secret{Transform: HashSHA256, Key: seq(32, 9)}
		k, _ := gen.TransformKey(tHostNQN)
		v := map[string]any{
			"source":       "TestKernelVectorLoader",
			"transactions": []kernelTransaction{x},
			"nvme_cli_gen": []map[string]any{{"secret_hex": hex.EncodeToString(gen.Key), "hmac": 1, "key_length": 32, "nqn": tHostNQN, "output": Secret{Transform: 1, Key: k}.Encode()}},
		}
		file := filepath.Join(t.TempDir(), "kernel-test.json")
		write := func() {
			b, _ := json.Marshal(v)
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write()
		if n, errs := checkKernelFile(file); n != 6 || len(errs) != 0 {
			t.Fatalf("%v: %d checks, errors %v", g, n, errs)
		}
		for _, field := range []*string{&x.ReplyMsg, &x.Success1Msg} {
			orig := *field
			b := unhex(t, orig)
			b[16] ^= 1 // first byte of R1 / R2
			*field = hex.EncodeToString(b)
			v["transactions"] = []kernelTransaction{x}
			write()
			if _, errs := checkKernelFile(file); len(errs) != 1 {
				t.Fatalf("%v: flipped response bit: errors %v", g, errs)
			}
			*field = orig
		}
	}
}
