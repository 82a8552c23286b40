package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// replicaRig is a fake one-leader cluster knowing nodes n1..n4, whose
// liveness the test sets, behind a real HTTP server and api.Client.
type replicaRig struct {
	f       *fakeNode
	live    map[string]bool
	refused map[string]bool // of the nodes not live: refused (else unreachable)
	c       *api.Client
}

func newReplicaRig(t *testing.T) *replicaRig {
	t.Helper()
	g := &replicaRig{f: newFakeNode(), live: map[string]bool{"n1": true, "n2": true, "n3": true, "n4": true}}
	for _, id := range []string{"n2", "n3", "n4"} {
		g.f.st.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpRegisterNode,
			Node: &catalog.Node{ID: id, APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"}})
	}
	s := New(Options{Node: g.f, Live: g.liveFn()})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	g.c = api.NewClient(srv.URL, nil)
	t.Cleanup(g.c.Close)
	return g
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func wantAPIErr(t *testing.T, err error, status int, code, msg string) {
	t.Helper()
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("err %v, want %d %s containing %q", err, status, code, msg)
	}
}

// TestReplicatedVolumeAPI: create with replicas (placed on reachable
// nodes), status, replica add/remove and failover through the client,
// with errors that name the cause.
func TestReplicatedVolumeAPI(t *testing.T) {
	g := newReplicaRig(t)
	g.live["n3"] = false
	v, err := g.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "db", Size: 1 << 20, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if v.Node != "n1" || v.Replicas != 3 || v.Epoch != 1 || len(v.ReplicaSet) != 3 || v.ReplicaSet[1].Node != "n2" || v.ReplicaSet[2].Node != "n4" {
		t.Fatalf("created %+v (want owner n1, copies on the reachable n2 and n4)", v)
	}
	g.live["n4"] = false
	_, err = g.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "db2", Size: 1 << 20, Replicas: 3})
	wantAPIErr(t, err, 409, api.CodeConflict, "n3 (not reachable)")
	_, err = g.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "db2", Size: 1 << 20, Replicas: 4})
	wantAPIErr(t, err, 400, api.CodeInvalid, "want 1 to 3")
	if _, err := g.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "db2", Size: 1 << 20, Replicas: 2, ReplicaNodes: []string{"n3"}}); err != nil {
		t.Fatalf("explicit placement: %v", err)
	}

	st, err := g.c.VolumeStatus(ctx(t), "db")
	if err != nil || st.Owner != "n1" || st.Epoch != 1 || st.Replicas != 3 || st.InSync != 3 || len(st.ReplicaStatus) != 3 || !st.ReplicaStatus[0].Owner || st.ReplicaStatus[0].Node != "n1" {
		t.Fatalf("status %+v %v", st, err)
	}
	_, err = g.c.VolumeStatus(ctx(t), "nope")
	wantAPIErr(t, err, 404, api.CodeNotFound, `volume "nope"`)

	err = g.c.RemoveReplica(ctx(t), "db", "n1")
	wantAPIErr(t, err, 409, api.CodeConflict, "is the owner")
	if err := g.c.RemoveReplica(ctx(t), "db", "n4"); err != nil {
		t.Fatal(err)
	}
	v, err = g.c.AddReplica(ctx(t), "db", "n3")
	if err != nil || len(v.ReplicaSet) != 3 || v.ReplicaSet[2].Node != "n3" || v.ReplicaSet[2].State != catalog.ReplicaSyncing || v.ReplicaSet[2].Path != "db.img" {
		t.Fatalf("add %+v %v", v, err)
	}
	_, err = g.c.AddReplica(ctx(t), "db", "n4")
	wantAPIErr(t, err, 409, api.CodeConflict, "already has 3 replicas")

	// The owner reports progress (internal/apply, with its epoch).
	st, _ = g.c.VolumeStatus(ctx(t), "db")
	_, err = New(Options{Node: g.f}).Propose(ctx(t), catalog.Command{Op: catalog.OpReportRebuild, Name: "db", NodeID: "n3", Epoch: 1,
		Rebuild: &catalog.Rebuild{Full: true, Copied: 1 << 19, Total: 1 << 20, Rate: 1 << 18}})
	if err != nil {
		t.Fatal(err)
	}
	st, _ = g.c.VolumeStatus(ctx(t), "db")
	if r := st.ReplicaStatus[2]; r.Percent != 50 || r.ETASeconds == nil || *r.ETASeconds != 2 {
		t.Fatalf("rebuild status %+v", r)
	}

	// Failover: to a syncing copy is refused; to n2 works; chosen.
	_, err = g.c.Failover(ctx(t), "db", "n3")
	wantAPIErr(t, err, 409, api.CodeConflict, "only an in-sync replica may become owner")
	v, err = g.c.Failover(ctx(t), "db", "n2")
	if err != nil || v.Node != "n2" || v.Epoch != 2 {
		t.Fatalf("failover %+v %v", v, err)
	}
	if v, err = g.c.Failover(ctx(t), "db", "n2"); err != nil || v.Epoch != 2 {
		t.Fatalf("repeated failover %+v %v", v, err)
	}
	g.live["n1"] = false
	_, err = g.c.Failover(ctx(t), "db", "")
	wantAPIErr(t, err, 409, api.CodeConflict, "no in-sync replica other than the owner n2 is on a reachable node")
	g.live["n1"] = true
	if v, err = g.c.Failover(ctx(t), "db", ""); err != nil || v.Node != "n1" || v.Epoch != 3 {
		t.Fatalf("chosen failover %+v %v", v, err)
	}

	// The deposed owner n2 (epoch 2) tries to fault a copy: 409
	// stale_epoch, which the owner's Propose sees as catalog.ErrStaleEpoch.
	_, err = New(Options{Node: g.f}).Propose(ctx(t), catalog.Command{Op: catalog.OpSetReplicaState, Name: "db", NodeID: "n1", State: catalog.ReplicaFaulted, Epoch: 2})
	if !errors.Is(err, catalog.ErrStaleEpoch) {
		t.Fatalf("stale owner's proposal: %v", err)
	}
	st2, eb, _ := call(t, New(Options{Node: g.f}), "POST", "/v1/internal/apply", "",
		`{"command":{"v":2,"op":"set_replica_state","name":"db","node_id":"n1","state":"faulted","epoch":2}}`)
	if st2 != 409 || eb.Error.Code != api.CodeStaleEpoch || !strings.Contains(eb.Error.Message, "epoch 2, the volume is at epoch 3") {
		t.Fatalf("internal apply with a stale epoch: %d %+v", st2, eb)
	}
	if err := (&api.Error{Code: api.CodeStaleEpoch}); !errors.Is(err, catalog.ErrStaleEpoch) {
		t.Fatal("stale_epoch does not match catalog.ErrStaleEpoch")
	}

	// The owner n1 (epoch 3) reports its resync through internal/apply
	// (as a follower forwards it); volume status shows it; the deposed
	// n2 cannot.
	st2, eb, _ = call(t, New(Options{Node: g.f}), "POST", "/v1/internal/apply", "",
		`{"command":{"v":2,"op":"report_resync","name":"db","epoch":3,"rebuild":{"copied":262144,"total":1048576,"rate":262144}}}`)
	if st2 != 200 {
		t.Fatalf("resync report: %d %+v", st2, eb)
	}
	st, _ = g.c.VolumeStatus(ctx(t), "db")
	if rs := st.Resync; rs == nil || rs.Source != "n1" || !slices.Equal(rs.Targets, []string{"n2"}) || rs.Percent != 25 || rs.ETASeconds == nil || *rs.ETASeconds != 3 || !rs.Progress.Full {
		t.Fatalf("resync status %+v", st.Resync)
	}
	_, err = New(Options{Node: g.f}).Propose(ctx(t), catalog.Command{Op: catalog.OpReportResync, Name: "db", Epoch: 2})
	if !errors.Is(err, catalog.ErrStaleEpoch) {
		t.Fatalf("deposed owner clears the resync: %v", err)
	}
}

// TestInternalFailoverNeedsEpoch: a node's failover through internal/apply
// must say which epoch it was decided at.
func TestInternalFailoverNeedsEpoch(t *testing.T) {
	g := newReplicaRig(t)
	if _, err := g.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "db", Size: 1 << 20, Replicas: 2}); err != nil {
		t.Fatal(err)
	}
	s := New(Options{Node: g.f})
	st, eb, _ := call(t, s, "POST", "/v1/internal/apply", "", `{"command":{"v":2,"op":"failover","name":"db","node_id":"n2"}}`)
	if st != 400 || !strings.Contains(eb.Error.Message, "epoch") {
		t.Fatalf("failover without epoch: %d %+v", st, eb)
	}
	st, eb, _ = call(t, s, "POST", "/v1/internal/apply", "", `{"command":{"v":2,"op":"failover","name":"db","node_id":"n2","epoch":1,"state":"faulted"}}`)
	if st != 200 || g.f.st.Volumes["db"].Node != "n2" {
		t.Fatalf("failover with epoch: %d %+v", st, eb)
	}
}
