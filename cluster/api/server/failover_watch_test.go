package server

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
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

// TestFailoverWatchRefused: an owner whose host refuses connections (no
// rdmablkd listening: killed, crashed) fails over after RefusedGrace, not
// Grace; a probe that times out meanwhile puts it back under Grace; the
// record says which.
func TestFailoverWatchRefused(t *testing.T) {
	g := newReplicaRig(t)
	for _, name := range []string{"a", "b"} {
		if _, err := g.c.CreateVolume(ctx(t), g.req(name, 2)); err != nil { // n1 owns both
			t.Fatal(err)
		}
	}
	now := time.Date(2026, 11, 25, 5, 0, 0, 0, time.UTC)
	w := newFailoverWatch(New(Options{Node: g.f, Live: g.liveFn()}),
		WatchOptions{Grace: 3 * time.Second, RefusedGrace: time.Second, Now: func() time.Time { return now }})
	step := func(d time.Duration) []catalog.Command {
		now = now.Add(d)
		return w.pass(context.Background())
	}
	g.live["n1"], g.refused = false, map[string]bool{"n1": true}
	if c := step(0); len(c) != 0 {
		t.Fatalf("failed over at the first refusal: %+v", c)
	}
	g.refused["n1"] = false // one probe times out: the full grace again
	if c := step(time.Second); len(c) != 0 {
		t.Fatalf("failed over after a timed-out probe within the grace: %+v", c)
	}
	g.refused["n1"] = true
	if c := step(time.Second); len(c) != 0 {
		t.Fatalf("failed over 2 s into an outage with a timed-out probe: %+v", c)
	}
	if c := step(time.Second); len(c) != 2 {
		t.Fatalf("after the full grace: %+v", c)
	}
	// A fresh outage, refused at every probe: RefusedGrace is enough.
	g.live["n1"], g.refused = true, map[string]bool{}
	if _, err := g.c.CreateVolume(ctx(t), g.req("c", 3)); err != nil {
		t.Fatal(err)
	}
	step(time.Second) // the watch sees n1 back
	owner := g.f.st.Volumes["c"].Node
	g.live[owner], g.refused[owner] = false, true
	if c := step(0); len(c) != 0 {
		t.Fatalf("failed over at once: %+v", c)
	}
	var moved bool
	for _, c := range step(time.Second) {
		moved = moved || c.Name == "c" && c.NodeID != owner
	}
	v := g.f.st.Volumes["c"]
	r, _ := v.Replica(owner)
	if !moved || v.Node == owner || r.State != catalog.ReplicaFaulted || !strings.Contains(r.Message, "refused connections for 1s") {
		t.Fatalf("after RefusedGrace: volume c %+v, the lost owner's copy %+v", v, r)
	}
}

func (g *replicaRig) req(name string, replicas int) api.CreateVolumeRequest {
	return api.CreateVolumeRequest{Name: name, Size: 1 << 20, Replicas: replicas}
}

// liveFn reports the rig's nodes as g.live and g.refused say: Live,
// else Refused when g.refused has it, else Unreachable.
func (g *replicaRig) liveFn() func(context.Context, []catalog.Node) map[string]Reach {
	return func(_ context.Context, nodes []catalog.Node) map[string]Reach {
		out := map[string]Reach{}
		for _, n := range nodes {
			switch {
			case g.live[n.ID]:
				out[n.ID] = Live
			case g.refused[n.ID]:
				out[n.ID] = Refused
			default:
				out[n.ID] = Unreachable
			}
		}
		return out
	}
}

// TestProbeNodesReach: the real probe tells a node whose host refuses the
// connection (nothing listens on its API port) from one that accepts and
// never answers (a hung daemon, or what a partition looks like: the probe
// times out), and both from one that answers as itself.
func TestProbeNodesReach(t *testing.T) {
	f := newFakeNode()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close() // accepts (the kernel's backlog), never answers
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"node":"n4"}`))
	}))
	defer live.Close()
	for id, addr := range map[string]string{"n2": "127.0.0.1:1", "n3": silent.Addr().String(), "n4": strings.TrimPrefix(live.URL, "http://")} {
		f.st.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpRegisterNode,
			Node: &catalog.Node{ID: id, APIAddr: addr, RaftAddr: "127.0.0.1:2"}})
	}
	got := New(Options{Node: f}).probeNodes(context.Background())
	want := map[string]Reach{"n1": Live, "n2": Refused, "n3": Unreachable, "n4": Live}
	for id, r := range want {
		if got[id] != r {
			t.Errorf("%s: %d, want %d", id, got[id], r)
		}
	}
}
