package cluster

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// TestJoinUnservedRefused: a join that names addresses nobody serves is
// refused before membership changes, even with the node token; a
// one-node cluster keeps its leader and its writes. Without any identity
// join and remove are 401.
func TestJoinUnservedRefused(t *testing.T) {
	ms := startCluster(t, 1)
	m := ms[0]
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	ghost := catalog.Node{ID: "ghost", RaftAddr: deadAddr, APIAddr: deadAddr}

	anon := api.NewClient(m.a.APIAddr(), nil)
	defer anon.Close()
	if err := anon.Join(ctx(t), ghost); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("join without identity: %v, want 401", err)
	}
	if err := anon.Remove(ctx(t), "ghost"); !errors.Is(err, api.ErrUnauthenticated) {
		t.Fatalf("remove without identity: %v, want 401", err)
	}
	node := api.NewClient(m.a.APIAddr(), nil)
	node.SetToken(testNodeToken)
	defer node.Close()
	if err := node.Join(ctx(t), ghost); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("join of an unserved node: %v, want conflict", err)
	}
	// A node that answers as someone else is refused too.
	if err := node.Join(ctx(t), catalog.Node{ID: "ghost", RaftAddr: m.raftAddr, APIAddr: m.a.APIAddr()}); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("join naming n1's API as ghost: %v, want conflict", err)
	}
	st, err := m.c.Status(ctx(t))
	if err != nil || len(st.Members) != 1 || st.LeaderID != m.id {
		t.Fatalf("membership changed: %+v %v", st, err)
	}
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := m.c.CreateVolume(c, api.CreateVolumeRequest{Name: "still-writable", Size: 1 << 20}); err != nil {
		t.Fatalf("write after refused join: %v", err)
	}
}
