package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerTLSErrors: unreadable or non-PEM key material is an error
// naming the problem.
func TestServerTLSErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]string{"missing cert": missing, "not PEM": notPEM} {
		if _, err := ServerTLS(f, f, ""); err == nil || !strings.HasPrefix(err.Error(), "api server: tls") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
