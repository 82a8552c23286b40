package agent

import (
	"bytes"
	"crypto/tls"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/target"
)

// TestAPIExposure: which binds and identity setups start, and with what
// open roles; a non-loopback API without TLS or admin identities is
// refused unless insecure, which warns.
func TestAPIExposure(t *testing.T) {
	mtls := &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}
	plainTLS := &tls.Config{}
	admin := []server.TokenEntry{{Role: server.RoleAdmin | server.RoleReader, Name: "alice"}}
	for _, c := range []struct {
		name    string
		cfg     Config
		refused string
		warn    string
	}{
		{"loopback, nothing configured", Config{APIBind: "127.0.0.1:7420", Bootstrap: true}, "", ""},
		{"localhost", Config{APIBind: "localhost:7420", Bootstrap: true}, "", ""},
		{"ipv6 loopback", Config{APIBind: "[::1]:7420", Bootstrap: true}, "", ""},
		{"all addresses, no TLS", Config{APIBind: "0.0.0.0:7420"}, "has no TLS", ""},
		{"public address, no TLS, tokens", Config{APIBind: "192.0.2.1:7420", Tokens: admin}, "has no TLS", ""},
		{"public, TLS without client CA or tokens", Config{APIBind: "192.0.2.1:7420", ServerTLS: plainTLS}, "no admin identity", ""},
		{"public, TLS + tokens", Config{APIBind: "192.0.2.1:7420", ServerTLS: plainTLS, Tokens: admin, NodeToken: "0123456789abcdef"}, "", ""},
		{"public, mutual TLS", Config{APIBind: "192.0.2.1:7420", ServerTLS: mtls}, "", ""},
		{"insecure", Config{APIBind: "0.0.0.0:7420", Insecure: true}, "", "INSECURE"},
		{"joiner without node identity", Config{APIBind: "127.0.0.1:0", Join: []string{"x"}}, "", "no node identity"},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, nil))
		_, err := apiAuth(c.cfg, log)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s: refused: %v", c.name, err)
		case c.refused != "" && (!errors.Is(err, cluster.ErrBadConfig) || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s: %v, want refusal with %q", c.name, err, c.refused)
		}
		if c.warn != "" && !strings.Contains(buf.String(), "level=WARN") || c.warn != "" && !strings.Contains(buf.String(), c.warn) {
			t.Errorf("%s: log %q, want a WARN with %q", c.name, buf.String(), c.warn)
		}
		if c.warn == "" && strings.Contains(buf.String(), "WARN") {
			t.Errorf("%s: unexpected warning %q", c.name, buf.String())
		}
	}
}

// TestNodeToken: created (0600, 256 bits) by a bootstrapping node when
// missing, read back the same, refused when readable by others, too short,
// or missing on a joiner.
func TestNodeToken(t *testing.T) {
	dir := t.TempDir()
	log := slog.New(slog.DiscardHandler)
	f := filepath.Join(dir, "sub", "node.token")
	if _, err := NodeToken(f, false, log); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("joiner, missing: %v", err)
	}
	tok, err := NodeToken(f, true, log)
	if err != nil || len(tok) < 40 {
		t.Fatalf("create: %q %v", tok, err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	if again, err := NodeToken(f, true, log); err != nil || again != tok {
		t.Fatalf("re-read: %q %v", again, err)
	}
	os.Chmod(f, 0o644)
	if _, err := NodeToken(f, false, log); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("world-readable: %v", err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	if _, err := NodeToken(short, false, log); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("short: %v", err)
	}
}

// TestStartRefusedCleanly: a refused start returns the error (no panic)
// and leaves nothing running: the same data directory starts afterwards.
func TestStartRefusedCleanly(t *testing.T) {
	tgt := target.New(target.Options{Workers: 1, Logger: slog.New(slog.DiscardHandler)})
	defer tgt.Close()
	dir := t.TempDir()
	cfg := Config{NodeID: "n1", DataDir: dir, RaftBind: "127.0.0.1:0", APIBind: "0.0.0.0:0", Bootstrap: true,
		Target: tgt, Logger: slog.New(slog.DiscardHandler)}
	if a, err := Start(cfg); err == nil || a != nil || !strings.Contains(err.Error(), "has no TLS") {
		t.Fatalf("Start: %v %v", a, err)
	}
	cfg.APIBind = "127.0.0.1:0"
	a, err := Start(cfg)
	if err != nil {
		t.Fatalf("restart on the same data dir: %v", err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
}
