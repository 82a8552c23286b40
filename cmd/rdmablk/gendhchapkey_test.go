package main

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestGenDHCHAPKey: the output parses with auth.ParseSecret, has the asked
// transformation and length, and re-encodes to itself.
func TestGenDHCHAPKey(t *testing.T) {
	const host = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
	cases := []struct {
		args    []string
		hh      auth.HashID
		keyLen  int
		wantErr string
	}{
		{nil, auth.HashNone, 32, ""},
		{[]string{"--hmac", "1", "--nqn", host}, auth.HashSHA256, 32, ""},
		{[]string{"-m", "2", "-n", host}, auth.HashSHA384, 48, ""},
		{[]string{"--hmac", "3", "--nqn", host, "-l", "64"}, auth.HashSHA512, 64, ""},
		{[]string{"-l", "48"}, auth.HashNone, 48, ""},
		{[]string{"--key-length", "64"}, auth.HashNone, 64, ""},
		{[]string{"--hmac", "4"}, 0, 0, "--hmac 4"},
		{[]string{"--key-length", "33"}, 0, 0, "--key-length 33"},
		{[]string{"--hmac", "1", "--key-length", "64", "--nqn", host}, 0, 0, "does not fit --hmac 1"},
		{[]string{"--secret", "abcd"}, 0, 0, "--secret is 2 bytes"},
	}
	for _, tc := range cases {
		out, err := runRoot(t, append([]string{"gen-dhchap-key"}, tc.args...)...)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		line := strings.TrimSuffix(out, "\n")
		s, err := auth.ParseSecret(line)
		if err != nil {
			t.Fatalf("%v: %q does not parse: %v", tc.args, out, err)
		}
		if s.Transform != tc.hh || len(s.Key) != tc.keyLen || s.Encode() != line || !strings.HasSuffix(line, ":") {
			t.Fatalf("%v: %q: transform %v, %d-byte key, re-encoded %q", tc.args, line, s.Transform, len(s.Key), s.Encode())
		}
	}
	// --secret with --hmac: nvme-cli's output, the key transformed with
	// the NQN; without --hmac the key as given.
	key := bytes.Repeat([]byte{0xab}, 32)
	out, err := runRoot(t, "gen-dhchap-key", "--hmac", "1", "--nqn", host, "--secret", hex.EncodeToString(key))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := (auth.Secret{Transform: auth.HashSHA256, Key: key}).TransformKey(host)
	if s, err := auth.ParseSecret(out); err != nil || !bytes.Equal(s.Key, want) || s.Transform != auth.HashSHA256 {
		t.Fatalf("--secret --hmac 1: %q %v", out, err)
	}
	out, err = runRoot(t, "gen-dhchap-key", "--secret", hex.EncodeToString(key))
	if s, perr := auth.ParseSecret(out); err != nil || perr != nil || !bytes.Equal(s.Key, key) || s.Transform != auth.HashNone {
		t.Fatalf("--secret: %q %v %v", out, err, perr)
	}
	// Two runs differ (a random key).
	a, _ := runRoot(t, "gen-dhchap-key")
	b, _ := runRoot(t, "gen-dhchap-key")
	if a == b {
		t.Fatal("two keys are equal")
	}
}

// TestDHCHAPFlags: the flags reach initiator.Options; bad values are one
// clear error naming the flag.
func TestDHCHAPFlags(t *testing.T) {
	sec, _ := auth.GenerateSecret(bytes.NewReader(bytes.Repeat([]byte{1}, 64)), auth.HashSHA256, 0)
	csec, _ := auth.GenerateSecret(bytes.NewReader(bytes.Repeat([]byte{2}, 64)), auth.HashSHA384, 0)
	g := &globals{dhchapSecret: sec.Encode(), dhchapCtrlSecret: csec.Encode()}
	if err := g.dhchap(); err != nil {
		t.Fatal(err)
	}
	o := g.optionsFor(nil)
	if o.DHCHAPSecret == nil || !bytes.Equal(o.DHCHAPSecret.Key, sec.Key) || o.DHCHAPCtrlSecret == nil || !bytes.Equal(o.DHCHAPCtrlSecret.Key, csec.Key) {
		t.Fatalf("options %v %v", o.DHCHAPSecret, o.DHCHAPCtrlSecret)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "key")
	os.WriteFile(good, []byte(sec.Encode()+"\n"), 0o600)
	open := filepath.Join(dir, "open")
	os.WriteFile(open, []byte(sec.Encode()+"\n"), 0o644)
	g = &globals{dhchapSecretFile: good}
	if err := g.dhchap(); err != nil || g.hostSecret == nil || !bytes.Equal(g.hostSecret.Key, sec.Key) {
		t.Fatalf("--dhchap-secret-file: %v", err)
	}

	for name, g := range map[string]*globals{
		"--dhchap-secret:":            {dhchapSecret: "DHHC-1:01:nope:"},
		"--dhchap-ctrl-secret needs":  {dhchapCtrlSecret: csec.Encode()},
		"give one":                    {dhchapSecret: sec.Encode(), dhchapSecretFile: good},
		"readable by everyone":        {dhchapSecretFile: open},
		"--dhchap-ctrl-secret: auth:": {dhchapSecret: sec.Encode(), dhchapCtrlSecret: "DHHC-1:09:x:"},
	} {
		if err := g.dhchap(); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err %v", name, err)
		}
	}
	// Every connecting command has the flags (persistent, with nvme-cli's
	// short forms).
	root := newRoot()
	for _, sub := range []string{"discover", "identify", "read", "write", "bench", "connect"} {
		c, _, err := root.Find([]string{sub})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"dhchap-secret", "dhchap-ctrl-secret"} {
			if c.Flag(f) == nil {
				t.Errorf("%s has no --%s", sub, f)
			}
		}
	}
	if f := root.PersistentFlags().ShorthandLookup("S"); f == nil || f.Name != "dhchap-secret" {
		t.Errorf("-S is %v", f)
	}
	if f := root.PersistentFlags().ShorthandLookup("C"); f == nil || f.Name != "dhchap-ctrl-secret" {
		t.Errorf("-C is %v", f)
	}
}

// TestWithoutSecretArgs: a background attachment's command line carries
// no secret, in any form the flags take.
func TestWithoutSecretArgs(t *testing.T) {
	in := []string{"connect", "-a", "10.0.0.1", "--dhchap-secret", "DHHC-1:01:A:", "-C", "DHHC-1:01:B:",
		"--dhchap-ctrl-secret=DHHC-1:01:C:", "-SDHHC-1:01:D:", "-S=DHHC-1:01:E:", "--dhchap-secret-file", "/k", "-s", "4420", "--queues", "2"}
	got := strings.Join(withoutSecretArgs(in), " ")
	if want := "connect -a 10.0.0.1 --dhchap-secret-file /k -s 4420 --queues 2"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	t.Setenv(envDHCHAPSecret, "DHHC-1:00:nope:")
	g := &globals{}
	if err := g.dhchap(); err == nil || !strings.Contains(err.Error(), "--dhchap-secret") {
		t.Fatalf("secret from the environment not used: %v", err)
	}
}
