package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/internal/daemon"
)

// TestDefaultDaemonOverTCP: the embedded default daemon configuration
// (go run ./cmd/rdmablkd), on free ports instead of 4420 / 8009, serves
// NVMe/TCP: `rdmablk discover -t tcp` lists the default volume's
// subsystem with TRTYPE tcp, and `rdmablk bench -t tcp` (no --nqn: the
// subsystem from the discovery log) and write/read run through it, also
// with header and data digests.
func TestDefaultDaemonOverTCP(t *testing.T) {
	cfg, err := daemon.Load(daemon.NewViper(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.Metrics.Listen = ""
	// This test binary registers a fake "ibverbs" (root_test.go): the
	// default's RDMA listener runs on the soft provider, as without RDMA.
	cfg.Transport.Provider = "soft"
	tcpIdx := -1
	for i := range cfg.Listeners {
		host, _, err := net.SplitHostPort(cfg.Listeners[i].Addr)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Listeners[i].Addr = net.JoinHostPort(host, "0")
		if strings.EqualFold(cfg.Listeners[i].Transport, "tcp") {
			tcpIdx = i
		}
	}
	if tcpIdx < 0 {
		t.Fatalf("the embedded default has no NVMe/TCP listener: %+v", cfg.Listeners)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.Start(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	_, port, err := net.SplitHostPort(d.Addrs()[tcpIdx])
	if err != nil {
		t.Fatal(err)
	}
	nqn := cfg.Subsystems[0].NQN

	out := runCLIOut(t, "127.0.0.1", "discover", "-t", "tcp", "-s", port)
	if !strings.Contains(out, nqn) || !strings.Contains(out, "tcp") {
		t.Fatalf("discover -t tcp does not list %s over tcp:\n%s", nqn, out)
	}
	for _, digests := range [][]string{nil, {"--hdr-digest", "--data-digest"}} {
		args := append([]string{"-t", "tcp", "-s", port}, digests...)
		root := newRoot()
		var bout, berr bytes.Buffer
		root.SetArgs(append([]string{"-a", "127.0.0.1", "--hostnqn", "nqn.2026-11.io.rdmablk:test-host",
			"--hostid", "01234567-89ab-4cde-8f01-23456789abcd", "bench", "--runtime", "100ms", "--rw", "mixed", "--rwmix", "50", "--bs", "16k", "--json"}, args...))
		root.SetOut(&bout)
		root.SetErr(&berr)
		if err := root.Execute(); err != nil {
			t.Fatalf("bench %v: %v\n%s", digests, err, berr.String())
		}
		var res struct {
			Reads, Writes, Errors uint64
		}
		if err := json.Unmarshal(bout.Bytes(), &res); err != nil {
			t.Fatalf("%v\n%s", err, bout.String())
		}
		if res.Reads == 0 || res.Writes == 0 || res.Errors != 0 {
			t.Fatalf("bench %v: %s", digests, bout.String())
		}
	}
}
