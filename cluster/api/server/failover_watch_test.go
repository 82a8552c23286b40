package server

import (
	"context"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

type follower struct{ *fakeNode }

func (follower) IsLeader() bool { return false }

// TestFailoverWatch: an owner unreachable for the grace period loses its
// replicated volumes to a reachable in-sync copy (epoch bumped, its own
// copy faulted, ANA moved); a shorter outage changes nothing; a follower
// proposes nothing; a volume without a reachable in-sync copy stays.
func TestFailoverWatch(t *testing.T) {
	g := newReplicaRig(t)
	if _, err := g.c.CreateVolume(ctx(t), g.req("db", 3)); err != nil { // n1 owns, copies on n2, n3
		t.Fatal(err)
	}
	if _, err := g.c.CreateVolume(ctx(t), g.req("solo", 1)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	s := New(Options{Node: g.f, Live: g.liveFn()})
	w := newFailoverWatch(s, WatchOptions{Grace: 3 * time.Second, Now: func() time.Time { return now }})
	step := func(d time.Duration) []catalog.Command {
		now = now.Add(d)
		return w.pass(context.Background())
	}

	g.live["n1"] = false
	if c := step(0); len(c) != 0 {
		t.Fatalf("failed over at once: %+v", c)
	}
	g.live["n1"] = true
	if c := step(2 * time.Second); len(c) != 0 {
		t.Fatalf("a 2 s outage: %+v", c)
	}
	g.live["n1"] = false
	if c := step(2 * time.Second); len(c) != 0 { // down again: the grace starts afresh
		t.Fatalf("grace not restarted: %+v", c)
	}
	fw := newFailoverWatch(New(Options{Node: follower{g.f}, Live: g.liveFn()}), WatchOptions{Grace: time.Second, Now: func() time.Time { return now }})
	fw.pass(context.Background())
	now = now.Add(5 * time.Second)
	if c := fw.pass(context.Background()); len(c) != 0 {
		t.Fatalf("a follower failed over: %+v", c)
	}
	now = now.Add(-5 * time.Second)
	g.live["n2"] = false // the lowest in-sync candidate is down too: n3
	c := step(3 * time.Second)
	if len(c) != 1 || c[0].Name != "db" || c[0].NodeID != "n3" {
		t.Fatalf("after the grace: %+v", c)
	}
	v := g.f.st.Volumes["db"]
	if r, _ := v.Replica("n1"); v.Node != "n3" || v.Epoch != 2 || r.State != catalog.ReplicaFaulted {
		t.Fatalf("db after automatic failover %+v", v)
	}
	if g.f.st.Volumes["solo"].Node != "n1" {
		t.Fatal("a volume without another copy moved")
	}
	if c := step(time.Second); len(c) != 0 {
		t.Fatalf("failed over twice: %+v", c)
	}
}

func (g *replicaRig) req(name string, replicas int) api.CreateVolumeRequest {
	return api.CreateVolumeRequest{Name: name, Size: 1 << 20, Replicas: replicas}
}

func (g *replicaRig) liveFn() func(context.Context, []catalog.Node) map[string]bool {
	return func(_ context.Context, nodes []catalog.Node) map[string]bool {
		out := map[string]bool{}
		for _, n := range nodes {
			out[n.ID] = g.live[n.ID]
		}
		return out
	}
}
