package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

// Secrets of the tests (nvme gen-dhchap-key format).
const (
	secretA = "DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:"
	secretB = "DHHC-1:00:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj/jBqb2:"
	hostA   = "nqn.2014-08.org.nvmexpress:uuid:aaaaaaaa-0000-0000-0000-000000000001"
	hostB   = "nqn.2014-08.org.nvmexpress:uuid:bbbbbbbb-0000-0000-0000-000000000002"
	hostC   = "nqn.2014-08.org.nvmexpress:uuid:cccccccc-0000-0000-0000-000000000003"
)

// loadFile loads a config file of the given text (in dir) over the
// defaults.
func loadFile(t *testing.T, dir, text string) (*Config, error) {
	t.Helper()
	f := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	v := NewViper()
	if err := MergeFile(v, f); err != nil {
		return nil, err
	}
	return Load(v, nil)
}

const authConfig = `
subsystems:
  - nqn: nqn.2026-11.io.rdmablk:vol0
    dhchap_required: true
    dhchap_dhgroups: [ffdhe2048, "null"]
    hosts:
      - ` + hostC + `
      - nqn: ` + hostA + `
        dhchap_secret: "` + secretA + `"
        dhchap_ctrl_secret_file: ctrl.key
        dhchap_hashes: [sha512]
      - nqn: ` + hostB + `
        dhchap_secret_env: HOST_B_SECRET
    namespaces:
      - nsid: 1
        volume: vol0
`

// TestDHCHAPConfig: host entries as an NQN alone or as a mapping with
// secrets inline, from a file and from a variable; the subsystem's lists
// and a host's override reach the target configuration.
func TestDHCHAPConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("ctrl.key", []byte(secretB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOST_B_SECRET", secretB)
	c, err := loadFile(t, dir, authConfig)
	if err != nil {
		t.Fatal(err)
	}
	s := &c.Subsystems[0]
	hosts, auths, err := s.targetHosts()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(hosts, " ") != hostC+" "+hostA+" "+hostB || len(auths) != 2 || !s.DHCHAPRequired {
		t.Fatalf("hosts %v, %d with secrets, required %v", hosts, len(auths), s.DHCHAPRequired)
	}
	a, b := auths[hostA], auths[hostB]
	if a.Secret.Encode() != secretA || a.CtrlSecret == nil || a.CtrlSecret.Encode() != secretB || b.Secret.Encode() != secretB || b.CtrlSecret != nil {
		t.Fatalf("secrets not loaded: %v / %v", a, b)
	}
	if len(a.Hashes) != 1 || a.Hashes[0] != auth.HashSHA512 || b.Hashes != nil {
		t.Fatalf("hashes %v / %v", a.Hashes, b.Hashes)
	}
	if len(b.DHGroups) != 2 || b.DHGroups[0] != auth.FFDHE2048 || b.DHGroups[1] != auth.DHNull {
		t.Fatalf("DH groups %v", b.DHGroups)
	}

	// The daemon builds the subsystem with them.
	c.Listeners = []ListenerConfig{{Addr: "127.0.0.1:0"}}
	c.DataDir, c.Metrics.Listen = dir, ""
	c.Volumes[0].Size = "1M"
	d, err := Start(c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	subs := d.Target().Subsystems()
	if len(subs) != 1 {
		t.Fatalf("%d subsystems", len(subs))
	}
	if ah, req := subs[0].AuthHosts(); !req || len(ah) != 2 {
		t.Fatalf("target subsystem: auth hosts %v, required %v", ah, req)
	}
}

// TestDHCHAPConfigErrors: every mistake is refused at load, naming the
// subsystem, host and key, and never quoting a secret.
func TestDHCHAPConfigErrors(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("open.key", []byte(secretB), 0o644); err != nil {
		t.Fatal(err)
	}
	badCRC := secretA[:20] + "x" + secretA[21:]
	sub := func(hosts string) string {
		return "subsystems:\n  - nqn: nqn.2026-11.io.rdmablk:vol0\n    hosts:\n" + hosts +
			"    namespaces:\n      - nsid: 1\n        volume: vol0\n"
	}
	cases := []struct{ name, text, want string }{
		{"BadSecret", sub("      - nqn: " + hostA + "\n        dhchap_secret: \"" + badCRC + "\"\n"),
			`subsystem "nqn.2026-11.io.rdmablk:vol0": host ` + hostA + `: dhchap_secret: auth: secret`},
		{"OpenFile", sub("      - nqn: " + hostA + "\n        dhchap_secret_file: open.key\n"),
			"dhchap_secret_file: open.key is accessible by group or others (mode -rw-r--r--): chmod 600 it"},
		{"MissingFile", sub("      - nqn: " + hostA + "\n        dhchap_secret_file: none.key\n"),
			"dhchap_secret_file: stat: no such file or directory"},
		{"TwoSources", sub("      - nqn: " + hostA + "\n        dhchap_secret: \"" + secretA + "\"\n        dhchap_secret_file: open.key\n"),
			"dhchap_secret: give one of dhchap_secret, dhchap_secret_file and dhchap_secret_env"},
		{"CtrlWithoutHost", sub("      - nqn: " + hostA + "\n        dhchap_ctrl_secret: \"" + secretB + "\"\n"),
			"a controller secret (dhchap_ctrl_secret…) needs a host secret"},
		{"UnsetVariable", sub("      - nqn: " + hostA + "\n        dhchap_secret_env: NOT_SET_ANYWHERE\n"),
			"dhchap_secret_env: variable NOT_SET_ANYWHERE is not set"},
		{"OwnPrefix", sub("      - nqn: " + hostA + "\n        dhchap_secret_env: RDMABLKD_SECRET\n"),
			"the RDMABLKD_ prefix belongs to rdmablkd's own settings"},
		{"BadHash", sub("      - nqn: " + hostA + "\n        dhchap_secret: \"" + secretA + "\"\n        dhchap_hashes: [md5]\n"),
			`dhchap_hashes: auth: unknown DH-HMAC-CHAP hash "md5"`},
		{"BareNullGroup", sub("      - nqn: " + hostA + "\n        dhchap_secret: \"" + secretA + "\"\n        dhchap_dhgroups: [null]\n"),
			`dhchap_dhgroups: empty entry (write the null group quoted, "null"`},
		{"RequiredNoSecret", strings.Replace(sub("      - "+hostA+"\n"), "    hosts:", "    dhchap_required: true\n    hosts:", 1),
			"dhchap_required, but no host has a dhchap_secret: no host could connect"},
		{"Twice", sub("      - " + hostA + "\n      - " + hostA + "\n"), "host " + hostA + " listed twice"},
		{"Typo", sub("      - nqn: " + hostA + "\n        dhchap_secert: \"" + secretA + "\"\n"),
			`unknown key "subsystems[0].hosts[0].dhchap_secert" (did you mean "subsystems[0].hosts[0].dhchap_secret"?)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadFile(t, dir, tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			for _, sec := range []string{secretA, secretB, badCRC, secretA[10:30], secretB[10:30]} {
				if strings.Contains(err.Error(), sec) {
					t.Fatalf("error quotes a secret: %v", err)
				}
			}
		})
	}
}

// TestPrintableSettingsRedacts: --print-config's map has every secret
// value redacted, keeps the rest, and still parses.
func TestPrintableSettingsRedacts(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "c.yaml")
	text := strings.ReplaceAll(authConfig, "dhchap_ctrl_secret_file: ctrl.key", "dhchap_ctrl_secret: \""+secretB+"\"")
	if err := os.WriteFile(f, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	v := NewViper()
	if err := MergeFile(v, f); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(PrintableSettings(v.AllSettings()))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, secretA[10:30]) || strings.Contains(s, secretB[10:30]) {
		t.Fatalf("secret printed:\n%s", s)
	}
	if strings.Count(s, "<redacted>") != 2 || !strings.Contains(s, hostA) || !strings.Contains(s, "HOST_B_SECRET") {
		t.Fatalf("printed config:\n%s", s)
	}
}
