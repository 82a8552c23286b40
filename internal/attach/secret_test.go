package attach

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

// TestConfigSecrets: dhchap_secret and dhchap_secret_file load, conflict
// and errors are named, and the secret never shows when a Config is
// printed or marshalled.
func TestConfigSecrets(t *testing.T) {
	sec, _ := auth.GenerateSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 64)), auth.HashSHA256, 0)
	csec, _ := auth.GenerateSecret(bytes.NewReader(bytes.Repeat([]byte{8}, 64)), auth.HashSHA512, 0)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "ctrl.key")
	os.WriteFile(keyFile, []byte(csec.Encode()+"\n"), 0o600)
	p := filepath.Join(dir, "a.yaml")
	os.WriteFile(p, []byte(fmt.Sprintf(`run_dir: %s
attachments:
  - {name: v0, nqn: nqn.x, paths: [a:1], dhchap_secret: "%s", dhchap_ctrl_secret_file: %s}
`, dir, sec.Encode(), keyFile)), 0o600)
	f, err := LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	c := f.Attachments[0]
	host, ctrl, err := c.secrets()
	if err != nil || host == nil || ctrl == nil || !bytes.Equal(host.Key, sec.Key) || !bytes.Equal(ctrl.Key, csec.Key) {
		t.Fatalf("secrets %v %v %v", host, ctrl, err)
	}
	key := sec.Encode()[len("DHHC-1:01:"):]
	key = key[:len(key)-1]
	j, _ := json.Marshal(c)
	y, _ := yaml.Marshal(c)
	for name, s := range map[string]string{"%v": fmt.Sprintf("%v", c), "%+v": fmt.Sprintf("%+v", c), "%#v": fmt.Sprintf("%#v", c), "json": string(j), "yaml": string(y)} {
		if strings.Contains(s, key) || !strings.Contains(s, "redacted") {
			t.Errorf("%s shows the secret or no redaction: %s", name, s)
		}
	}

	for want, body := range map[string]string{
		"both set":             fmt.Sprintf(`{name: x, nqn: n, paths: [a:1], dhchap_secret: "%s", dhchap_secret_file: %s}`, sec.Encode(), keyFile),
		"dhchap_secret: auth:": `{name: x, nqn: n, paths: [a:1], dhchap_secret: "DHHC-1:01:AAAA:"}`,
		"no such file":         `{name: x, nqn: n, paths: [a:1], dhchap_secret_file: /nonexistent/k}`,
	} {
		os.WriteFile(p, []byte("attachments: ["+body+"]"), 0o600)
		if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v", want, err)
		}
	}
	open := filepath.Join(dir, "open.key")
	os.WriteFile(open, []byte(sec.Encode()), 0o644)
	if _, err := ReadSecretFile(open); err == nil || !strings.Contains(err.Error(), "readable by everyone") {
		t.Errorf("world-readable secret file: %v", err)
	}
}
