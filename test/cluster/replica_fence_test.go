package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// TestReplicaEpochFencing (issue 16 item 3, the catalogue's side): the
// owner of a 3-replica volume is cut off from raft (its control API still
// answers); an admin fails the volume over through another node. The old
// owner then proposes, as its mirror would after a write to the new owner
// failed, "the third node's copy is faulted" with the epoch it knows
// (without fencing that would commit: the copy is not the owner's and not
// the last in sync): the leader rejects it (409 stale_epoch), so the
// deposed owner can never shrink the in-sync set and acknowledge a write
// without the new owner's copies. After the
// partition heals every node agrees on the new owner and epoch, with
// every copy still in sync.
func TestReplicaEpochFencing(t *testing.T) {
	ms := startCluster(t, 3)
	lead := leaderOf(t, ms)
	var old, other *member // two followers: the owner-to-be-cut and a witness
	for _, m := range ms {
		if m == lead {
			continue
		}
		if old == nil {
			old = m
		} else {
			other = m
		}
	}
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	v, err := lead.c.CreateVolume(c, api.CreateVolumeRequest{Name: "rv", Size: 1 << 20, Node: old.id, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if v.Node != old.id || v.Epoch != 1 || len(v.InSyncNodes()) != 3 {
		t.Fatalf("created %+v", v)
	}

	old.layer.setCut(true)
	t.Logf("owner %s cut off from raft (leader %s)", old.id, lead.id)
	v, err = other.c.Failover(c, "rv", lead.id)
	if err != nil || v.Node != lead.id || v.Epoch != 2 {
		t.Fatalf("failover away from the cut-off owner: %+v %v", v, err)
	}

	// The deposed owner, still at epoch 1 in its own catalogue, tries to
	// fault the witness's copy through its own API (forwarded to the
	// leader over HTTP, which still works).
	var seen uint64
	old.a.Node.View(func(st *catalog.State) { seen = st.Volumes["rv"].OwnerEpoch() })
	if seen != 1 {
		t.Fatalf("the cut-off owner already knows epoch %d", seen)
	}
	body, _ := json.Marshal(api.ApplyRequest{Command: catalog.Command{V: catalog.CommandVersion, Op: catalog.OpSetReplicaState,
		Name: "rv", NodeID: other.id, State: catalog.ReplicaFaulted, Message: "write to the copy failed", Epoch: seen}})
	req, _ := http.NewRequestWithContext(c, http.MethodPost, "http://"+old.a.APIAddr()+"/v1/internal/apply", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testNodeToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var eb api.ErrorBody
	json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || eb.Error.Code != api.CodeStaleEpoch {
		t.Fatalf("deposed owner's fault of a copy: %d %+v, want 409 stale_epoch", resp.StatusCode, eb)
	}

	old.layer.setCut(false)
	eventually(t, 30*time.Second, "every node at epoch 2 with the new owner and three in-sync copies", func() bool {
		for _, m := range ms {
			var v catalog.Volume
			m.a.Node.View(func(st *catalog.State) { v = st.Volumes["rv"].Clone() })
			if v.Node != lead.id || v.Epoch != 2 || len(v.InSyncNodes()) != 3 {
				return false
			}
		}
		return true
	})
}

// TestAutomaticFailover: the leader's failover watch (server.RunFailoverWatch,
// probing the nodes' APIs) moves a 2-replica volume off an owner that was
// stopped, once the grace period has passed: the surviving copy owns it at
// epoch 2, with the lost owner's copy faulted.
func TestAutomaticFailover(t *testing.T) {
	ms := startCluster(t, 3)
	lead := leaderOf(t, ms)
	var owner, copyNode *member
	for _, m := range ms {
		switch {
		case m == lead:
		case owner == nil:
			owner = m
		default:
			copyNode = m
		}
	}
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := lead.c.CreateVolume(c, api.CreateVolumeRequest{Name: "av", Size: 1 << 20, Node: owner.id, Replicas: 2, ReplicaNodes: []string{copyNode.id}}); err != nil {
		t.Fatal(err)
	}
	watch := server.New(server.Options{Node: lead.a.Node, NodeToken: testNodeToken, Logger: quietLogger()})
	wctx, wcancel := context.WithCancel(c)
	defer wcancel()
	go watch.RunFailoverWatch(wctx, server.WatchOptions{Interval: 100 * time.Millisecond, Grace: 500 * time.Millisecond})

	stopped := time.Now()
	owner.stop(t)
	eventually(t, 30*time.Second, "the volume owned by the surviving copy", func() bool {
		var v catalog.Volume
		lead.a.Node.View(func(st *catalog.State) { v = st.Volumes["av"].Clone() })
		r, _ := v.Replica(owner.id)
		return v.Node == copyNode.id && v.Epoch == 2 && r.State == catalog.ReplicaFaulted
	})
	t.Logf("failed over %v after the owner stopped (grace 500 ms)", time.Since(stopped).Round(10*time.Millisecond))
}
