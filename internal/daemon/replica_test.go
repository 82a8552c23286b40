package daemon

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/nvme"
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
		setting string
		target  reconcile.LegTarget
		want    []string
		err     string
	}{
		{"", both, []string{"10.0.0.2:4420", "[fd00::2]:4420", "tcp://10.0.0.2:4421"}, ""},
		{"auto", tcpOnly, []string{"tcp://10.0.0.2:4421"}, ""},
		{"RDMA", both, []string{"10.0.0.2:4420", "[fd00::2]:4420"}, ""},
		{"tcp", both, []string{"tcp://10.0.0.2:4421"}, ""},
		{"tcp", rdmaOnly, nil, "replica node n3 has no NVMe/TCP (cluster.replication.transport: tcp) listener"},
		{"rdma", tcpOnly, nil, "replica node n4 has no RDMA (cluster.replication.transport: rdma) listener"},
		{"auto", reconcile.LegTarget{Node: "n5"}, nil, "replica node n5 has no RDMA or NVMe/TCP listener"},
		{"iwarp", both, nil, `"iwarp": want auto, rdma or tcp`},
	} {
		got, err := legPaths(c.target, c.setting)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("legPaths(%s, %q) = %v, %v; want error %q", c.target.Node, c.setting, got, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("legPaths(%s, %q) = %v, %v; want %v", c.target.Node, c.setting, got, err, c.want)
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
