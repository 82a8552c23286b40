package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSConfigErrors: unreadable or empty files are errors that name
// the problem; an empty client configuration uses the system roots and
// presents no certificate. (The handshakes themselves are tested against
// a TLS cluster in test/cluster.)
func TestTLSConfigErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"client: missing CA":   func() error { _, err := ClientTLS(missing, "", ""); return err }(),
		"client: missing cert": func() error { _, err := ClientTLS("", missing, missing); return err }(),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "api: tls") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ClientTLS(notPEM, "", ""); err == nil || !strings.Contains(err.Error(), "no certificates in "+notPEM) {
		t.Errorf("client CA without certificates: %v", err)
	}
	c, err := ClientTLS("", "", "")
	if err != nil || c.RootCAs != nil || len(c.Certificates) != 0 {
		t.Fatalf("empty client config: %+v %v", c, err)
	}
}
