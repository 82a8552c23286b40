package cluster

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

func openSingle(t *testing.T, dir string) *Node {
	t.Helper()
	n, err := Open(Config{ID: "n1", Dir: dir, RaftBind: "127.0.0.1:0", Bootstrap: true,
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, n)
	return n
}

// waitLeader polls until n leads (raft's state has no change
// notification on Node), failing the test after 20 s.
func waitLeader(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !n.IsLeader() {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestNodeRestart: a one-node cluster applies, keeps its catalogue across
// Close and Open, and maps raft's errors: before the entry was taken
// (not the leader) versus after (leadership lost: outcome unknown).
func TestNodeRestart(t *testing.T) {
	dir := t.TempDir()
	n := openSingle(t, dir)
	reg := catalog.Command{Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: "n1", APIAddr: "127.0.0.1:1", RaftAddr: n.RaftAddr()}}
	if _, err := n.Apply(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(catalog.Command{Op: catalog.OpRemoveNode, NodeID: "nope"}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("catalogue rejection: %v", err)
	}
	for raftErr, want := range map[error]error{
		raft.ErrLeadershipLost:               ErrOutcomeUnknown,
		raft.ErrRaftShutdown:                 ErrOutcomeUnknown,
		raft.ErrNotLeader:                    ErrNotLeader,
		raft.ErrEnqueueTimeout:               ErrTimeout,
		raft.ErrLeadershipTransferInProgress: ErrNotLeader,
	} {
		if err := n.applyErr(raftErr); !errors.Is(err, want) {
			t.Errorf("%v → %v, want %v", raftErr, err, want)
		}
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(reg); err == nil {
		t.Fatal("apply on a closed node")
	}
	n = openSingle(t, dir)
	defer n.Close()
	var ok bool
	deadline := time.Now().Add(20 * time.Second)
	for !ok && time.Now().Before(deadline) {
		n.View(func(st *catalog.State) { _, ok = st.Nodes["n1"] })
		time.Sleep(10 * time.Millisecond)
	}
	if !ok {
		t.Fatal("catalogue lost across restart")
	}
}

// TestFollowerAppliesWithoutCommitTimeout: with a CommitTimeout far
// longer than the test, a follower still applies a write soon after the
// leader commits it (the barrier Apply adds carries the commit index);
// without the barrier it would wait for the next write or the timeout.
func TestFollowerAppliesWithoutCommitTimeout(t *testing.T) {
	open := func(id string, boot bool) *Node {
		n, err := Open(Config{ID: id, Dir: t.TempDir(), RaftBind: "127.0.0.1:0", Bootstrap: boot,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			CommitTimeout: time.Hour, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Close() })
		return n
	}
	leader := open("n1", true)
	waitLeader(t, leader)
	follower := open("n2", false)
	if err := leader.AddVoter("n2", follower.RaftAddr()); err != nil {
		t.Fatal(err)
	}
	changed, stop := follower.Watch()
	defer stop()
	for i, id := range []string{"n1", "n2"} {
		reg := catalog.Command{Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: id, APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"}}
		if _, err := leader.Apply(reg); err != nil {
			t.Fatal(err)
		}
		timeout := time.After(20 * time.Second)
		for !hasNode(follower, id) {
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("write %d: the follower has not applied it after 20 s (commit timeout 1 h)", i)
			}
		}
	}
}

func hasNode(n *Node, id string) bool {
	_, ok := n.State().Nodes[id]
	return ok
}
