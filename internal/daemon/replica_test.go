package daemon

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// TestLegPaths: cluster.replication.transport picks and orders the copy
// node's listeners a leg uses; a node without an allowed listener is an
// error that names the setting.
func TestLegPaths(t *testing.T) {
	both := reconcile.LegTarget{Node: "n2", Addrs: []catalog.Listener{
		{TrType: nvme.TrTypeTCP, TrAddr: "10.0.0.2", TrSvcID: "4421"},
		{TrType: nvme.TrTypeRDMA, TrAddr: "10.0.0.2", TrSvcID: "4420"},
		{TrType: nvme.TrTypeRDMA, TrAddr: "fd00::2", TrSvcID: "4420"},
	}}
	rdmaOnly := reconcile.LegTarget{Node: "n3", Addrs: both.Addrs[1:2]}
	tcpOnly := reconcile.LegTarget{Node: "n4", Addrs: both.Addrs[:1]}
	for _, c := range []struct {
		setting  string
		software bool // every local RDMA device is software
		target   reconcile.LegTarget
		want     []string
		err      string
	}{
		{"", false, both, []string{"10.0.0.2:4420", "[fd00::2]:4420", "tcp://10.0.0.2:4421"}, ""},
		{"auto", true, both, []string{"tcp://10.0.0.2:4421", "10.0.0.2:4420", "[fd00::2]:4420"}, ""},
		{"auto", true, rdmaOnly, []string{"10.0.0.2:4420"}, ""},
		{"auto", false, tcpOnly, []string{"tcp://10.0.0.2:4421"}, ""},
		{"RDMA", true, both, []string{"10.0.0.2:4420", "[fd00::2]:4420"}, ""},
		{"tcp", false, both, []string{"tcp://10.0.0.2:4421"}, ""},
		{"tcp", false, rdmaOnly, nil, "replica node n3 has no NVMe/TCP (cluster.replication.transport: tcp) listener"},
		{"rdma", false, tcpOnly, nil, "replica node n4 has no RDMA (cluster.replication.transport: rdma) listener"},
		{"auto", true, reconcile.LegTarget{Node: "n5"}, nil, "replica node n5 has no RDMA or NVMe/TCP listener"},
		{"iwarp", false, both, nil, `"iwarp": want auto, rdma or tcp`},
	} {
		got, err := legPaths(c.target, c.setting, c.software)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("legPaths(%s, %q, %v) = %v, %v; want error %q", c.target.Node, c.setting, c.software, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("legPaths(%s, %q, %v) = %v, %v; want %v", c.target.Node, c.setting, c.software, got, err, c.want)
		}
	}
}

// TestValidateReplicationTransport: a misspelt transport is refused at
// load, naming the key, not when the first replicated volume opens.
func TestValidateReplicationTransport(t *testing.T) {
	c, err := Load(NewViper(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Cluster.Enabled, c.Cluster.NodeID, c.Cluster.RaftBind = true, "n1", "127.0.0.1:7000"
	c.Cluster.Replication.Transport = "tcp"
	if err := c.Validate(); err != nil {
		t.Fatalf("transport tcp refused: %v", err)
	}
	c.Cluster.Replication.Transport = "roce"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "cluster.replication.transport") {
		t.Fatalf("transport roce: %v, want an error naming cluster.replication.transport", err)
	}
}

// fakeVerbs is a provider with a name and device names only.
type fakeVerbs struct {
	name string
	devs []string
}

func (f fakeVerbs) Name() string { return f.name }
func (f fakeVerbs) Devices() ([]verbs.Device, error) {
	var out []verbs.Device
	for _, n := range f.devs {
		out = append(out, namedDevice{name: n})
	}
	return out, nil
}
func (fakeVerbs) Listen(string, verbs.ListenOptions) (verbs.Listener, error) { return nil, nil }
func (fakeVerbs) Resolve(context.Context, string, verbs.ResolveOptions) (verbs.ConnID, error) {
	return nil, nil
}

// namedDevice is a verbs.Device that only has a name (the rest panics).
type namedDevice struct {
	verbs.Device
	name string
}

func (d namedDevice) Name() string { return d.name }

// TestSoftwareRDMAOnly: auto puts NVMe/TCP first only on the ibverbs
// provider when every device's sysfs entry lies under /devices/virtual
// (rxe, siw); a PCI device, a provider without devices, or the soft
// provider keep RDMA first.
func TestSoftwareRDMAOnly(t *testing.T) {
	root := t.TempDir()
	class := filepath.Join(root, "class", "infiniband")
	for dev, dir := range map[string]string{
		"rxe0":   "devices/virtual/infiniband/rxe0",
		"siw0":   "devices/virtual/infiniband/siw0",
		"mlx5_0": "devices/pci0000:00/0000:00:02.0/0000:3b:00.0/infiniband/mlx5_0",
	} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(class, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", dir), filepath.Join(class, dev)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		p    fakeVerbs
		want bool
	}{
		{fakeVerbs{"ibverbs", []string{"rxe0"}}, true},
		{fakeVerbs{"ibverbs", []string{"rxe0", "siw0"}}, true},
		{fakeVerbs{"ibverbs", []string{"rxe0", "mlx5_0"}}, false},
		{fakeVerbs{"ibverbs", []string{"mlx5_0"}}, false},
		{fakeVerbs{"ibverbs", []string{"gone0"}}, false},
		{fakeVerbs{"ibverbs", nil}, false},
		{fakeVerbs{"soft", []string{"rxe0"}}, false},
	} {
		if got := softwareRDMAOnly(c.p, class); got != c.want {
			t.Errorf("softwareRDMAOnly(%s %v) = %v, want %v", c.p.name, c.p.devs, got, c.want)
		}
	}
}

// TestLegZeroCopySendMin: cluster.replication.tcp_zero_copy_send_min
// unset sends legs' batches zero-copy from one 4 KiB write, negative never
// (the initiator's 0), anything else as set.
func TestLegZeroCopySendMin(t *testing.T) {
	for _, c := range []struct{ set, want int }{{0, 4096}, {-1, 0}, {-4096, 0}, {32768, 32768}, {1, 1}} {
		if got := legZeroCopySendMin(c.set); got != c.want {
			t.Errorf("tcp_zero_copy_send_min %d: leg ZeroCopySendMin %d, want %d", c.set, got, c.want)
		}
	}
}
