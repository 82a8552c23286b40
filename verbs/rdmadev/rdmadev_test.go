package rdmadev_test

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/verbs/rdmadev"
)

// fakeSysfs builds a sysfs tree with rxe0 on eth0 (port 1 ACTIVE: a link-
// local v1/v2 pair and 10.0.2.15 as v1 and v2) and a DOWN mlx5_0.
func fakeSysfs(t *testing.T) string {
	root := t.TempDir()
	w := func(path, content string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rxe := "class/infiniband/rxe0/"
	w(rxe+"node_type", "1: CA")
	w(rxe+"fw_ver", "0.0.0")
	port := rxe + "ports/1/"
	w(port+"state", "4: ACTIVE")
	w(port+"phys_state", "5: LinkUp")
	w(port+"link_layer", "Ethernet")
	gids := []struct{ gid, typ string }{
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"},
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"},
		{"0000:0000:0000:0000:0000:ffff:0a00:020f", "IB/RoCE v1"},
		{"0000:0000:0000:0000:0000:ffff:0a00:020f", "RoCE v2"},
		{"0000:0000:0000:0000:0000:0000:0000:0000", ""}, // unused
	}
	for i, g := range gids {
		idx := string(rune('0' + i))
		w(port+"gids/"+idx, g.gid)
		if g.typ != "" {
			w(port+"gid_attrs/types/"+idx, g.typ)
			w(port+"gid_attrs/ndevs/"+idx, "eth0")
		}
	}
	mlx := "class/infiniband/mlx5_0/ports/1/"
	w(mlx+"state", "1: DOWN")
	w(mlx+"link_layer", "Ethernet")
	w(mlx+"gids/0", "0000:0000:0000:0000:0000:ffff:c000:0201")
	w(mlx+"gid_attrs/types/0", "RoCE v2")
	w(mlx+"gid_attrs/ndevs/0", "eth1")
	return root
}

func TestListFakeSysfs(t *testing.T) {
	devs, err := rdmadev.Sysfs{Root: fakeSysfs(t)}.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(devs) != 2 || devs[0].Name != "mlx5_0" || devs[1].Name != "rxe0" {
		t.Fatalf("devices %+v", devs)
	}
	rxe := devs[1]
	if len(rxe.Ports) != 1 || !rxe.Ports[0].Active() || rxe.Ports[0].PhysState != "LinkUp" || rxe.Ports[0].LinkLayer != "Ethernet" {
		t.Fatalf("rxe0 port %+v", rxe.Ports)
	}
	if len(rxe.Netdevs) != 1 || rxe.Netdevs[0] != "eth0" {
		t.Fatalf("rxe0 netdevs %v", rxe.Netdevs)
	}
	g := rxe.Ports[0].GIDs
	if len(g) != 4 {
		t.Fatalf("GIDs %+v (the all-zero entry must be skipped)", g)
	}
	if !g[3].RoCEv2() || g[2].RoCEv2() || !g[3].IP().Equal(net.IPv4(10, 0, 2, 15)) || g[3].Index != 3 {
		t.Fatalf("GID 2/3: %+v %+v", g[2], g[3])
	}
	if devs[0].Ports[0].Active() {
		t.Fatalf("mlx5_0 port is DOWN")
	}
}

func TestServes(t *testing.T) {
	devs, err := rdmadev.Sysfs{Root: fakeSysfs(t)}.List()
	if err != nil {
		t.Fatal(err)
	}
	m, err := rdmadev.Serves(devs, []string{"10.0.2.15:4420"})
	if err != nil || len(m) != 1 || m[0].Device != "rxe0" || m[0].Port != 1 || m[0].GID.Index != 3 {
		t.Fatalf("Serves(10.0.2.15): %+v, %v", m, err)
	}
	if _, err := rdmadev.Serves(devs, []string{"0.0.0.0:4420", ":4421"}); err != nil {
		t.Fatalf("Serves(any): %v", err)
	}
	// 192.0.2.1 is on mlx5_0, whose port is down; loopback has no device.
	for _, a := range []string{"192.0.2.1:4420", "127.0.0.1:4420", "[fe80::5054:ff:fe12:3457]:4420"} {
		if _, err := rdmadev.Serves(devs, []string{a}); err == nil {
			t.Fatalf("Serves(%s) succeeded", a)
		}
	}
	if _, err := rdmadev.Serves(nil, []string{"10.0.2.15:4420"}); !errors.Is(err, rdmadev.ErrNoDevices) {
		t.Fatalf("Serves without devices: %v", err)
	}
}

func TestEmptySysfs(t *testing.T) {
	if _, err := (rdmadev.Sysfs{Root: t.TempDir()}).List(); !errors.Is(err, rdmadev.ErrNoDevices) {
		t.Fatalf("List on an empty tree: %v, want ErrNoDevices", err)
	}
}

// On the real host the calls must not fail in unexpected ways.
func TestRealHost(t *testing.T) {
	devs, err := rdmadev.List()
	if err != nil && !errors.Is(err, rdmadev.ErrNoDevices) {
		t.Fatalf("List: %v", err)
	}
	t.Logf("devices: %+v", devs)
	if m, err := rdmadev.NetnsMode(); err == nil {
		t.Logf("netns mode %s", m)
	}
}
