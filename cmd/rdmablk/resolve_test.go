package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// elsewhere is a discovery source that lists one subsystem on another
// target, as a cluster node lists volumes other nodes own.
type elsewhere struct{ e nvme.DiscoveryLogEntry }

func (s elsewhere) DiscoveryEntries(string) []nvme.DiscoveryLogEntry {
	return []nvme.DiscoveryLogEntry{s.e}
}

// startTarget starts a target on the soft provider over TCP at
// 127.0.0.1:0 with the subsystems given, and returns its address.
func startTarget(t *testing.T, disc target.DiscoverySource, nqns ...string) string {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	tgt := target.New(target.Options{Logger: log, Discovery: disc})
	for _, n := range nqns {
		if _, err := tgt.AddSubsystem(target.SubsystemConfig{NQN: n, Serial: "s1", AllowAnyHost: true,
			Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: mem.New(256, 512)}}}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{}), Target: tgt, Addr: "127.0.0.1:0", PortID: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); tgt.Close() })
	return l.Addr()
}

// TestConnectFollowsDiscoveryRecord: without --nqn, identify connects to
// the address the discovery record names (the owner), not to -a (a
// node that only lists the subsystem), and says so on stderr.
func TestConnectFollowsDiscoveryRecord(t *testing.T) {
	const nqn = "nqn.2026-11.io.rdmablk:owned-elsewhere"
	owner := startTarget(t, nil, nqn)
	host, port, _ := net.SplitHostPort(owner)
	cases := []struct {
		name   string
		traddr string // the record's TRADDR
	}{
		{"RecordAddress", host},
		{"WildcardRecordKeepsDiscoveryHost", "0.0.0.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lister := startTarget(t, elsewhere{nvme.DiscoveryLogEntry{
				TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4, SubType: nvme.SubTypeNVM,
				PortID: 7, TrAddr: tc.traddr, TrSvcID: port, SubNQN: nqn,
			}})
			var note bytes.Buffer
			g := &globals{traddr: lister, provider: "soft", profile: "default", timeout: 10 * time.Second,
				hostnqn: "nqn.2026-11.io.rdmablk:test-host", hostid: "01234567-89ab-4cde-8f01-23456789abcd", stderr: &note}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := g.connect(ctx)
			if err != nil {
				t.Fatalf("connect via the discovery log at %s: %v", lister, err)
			}
			defer c.Close()
			if got := c.Identify().SubNQN; got != nqn {
				t.Errorf("connected to %q, want %q", got, nqn)
			}
			if want := nqn + " is at " + owner + " (discovery log at " + lister + ")"; !strings.Contains(note.String(), want) {
				t.Errorf("stderr %q, want it to say %q", note.String(), want)
			}
		})
	}
}

func TestAddrForms(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1": "127.0.0.1:4420", "127.0.0.1:5000": "127.0.0.1:5000",
		"[::1]": "[::1]:4420", "::1": "[::1]:4420", "[::1]:5000": "[::1]:5000", "fe80::1%eth0": "[fe80::1%eth0]:4420",
	} {
		g := &globals{traddr: in, trsvcid: "4420"}
		if got := g.addr(); got != want {
			t.Errorf("addr(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTransportFlag(t *testing.T) {
	for in, want := range map[string]string{"rdma": "", "RDMA": "", "tcp": "", "TCP": "", "": `"": want rdma or tcp`, "fc": `"fc": want rdma or tcp`} {
		err := checkTransport(in)
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("checkTransport(%q) = %v, want %q", in, err, want)
		}
	}
}

// TestIPv6Loopback: -a '[::1]' -s PORT reaches a target on [::1].
func TestIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	ln.Close()
	log := slog.New(slog.DiscardHandler)
	const nqn = "nqn.2026-11.io.rdmablk:v6"
	tgt := target.New(target.Options{Logger: log})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{NQN: nqn, Serial: "s6", AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: mem.New(64, 512)}}}); err != nil {
		t.Fatal(err)
	}
	l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{}), Target: tgt, Addr: "[::1]:0", PortID: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); tgt.Close() })
	_, port, _ := net.SplitHostPort(l.Addr())
	out := runCLIOut(t, "[::1]", "-s", port, "identify", "--json")
	if !strings.Contains(out, `"subnqn": "`+nqn+`"`) {
		t.Fatalf("identify -a '[::1]' -s %s:\n%s", port, out)
	}
	out = runCLIOut(t, "[::1]", "-s", port, "discover", "--json")
	if !strings.Contains(out, `"adrfam": "ipv6"`) || !strings.Contains(out, `"traddr": "::1"`) {
		t.Errorf("discover -a '[::1]':\n%s", out)
	}
}

func TestVersionFlag(t *testing.T) {
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs([]string{"--version"})
	root.SetOut(&out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.HasPrefix(s, "rdmablk version ") || !strings.Contains(s, " commit ") || !strings.Contains(s, " go1.") {
		t.Fatalf("--version printed %q", s)
	}
}

// TestDiscoveryPort: without -s, discovery over -t tcp uses 8009 and
// I/O 4420 (nvme-cli's defaults); over rdma both use 4420; -s wins.
func TestDiscoveryPort(t *testing.T) {
	for _, tc := range []struct{ tr, svc, disc, io string }{
		{"tcp", "", "127.0.0.1:8009", "127.0.0.1:4420"},
		{"rdma", "", "127.0.0.1:4420", "127.0.0.1:4420"},
		{"tcp", "5000", "127.0.0.1:5000", "127.0.0.1:5000"},
	} {
		g := &globals{traddr: "127.0.0.1", trsvcid: tc.svc, transport: tc.tr}
		if d, a := g.discoveryAddr(), g.addr(); d != tc.disc || a != tc.io {
			t.Errorf("-t %s -s %q: discovery %s, I/O %s; want %s, %s", tc.tr, tc.svc, d, a, tc.disc, tc.io)
		}
	}
}
