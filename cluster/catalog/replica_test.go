package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// cluster3 is a state with nodes n1..n4 and volume "r" of 3 replicas
// (owner n1, copies on n2 and n3), exported by subsystem nqnA.
func cluster3(t testing.TB) *State {
	t.Helper()
	s := New()
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		mustApply(t, s, Command{V: CommandVersion, Op: OpRegisterNode, Node: &Node{ID: id, APIAddr: "a-" + id, RaftAddr: "r-" + id}})
	}
	v, err := NewVolume(VolumeSpec{Name: "r", Size: 1 << 20, Node: "n1", Replicas: 3, ReplicaNodes: []string{"n2", "n3"}}, hexID("ur"), hexID("gr"))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, Command{V: CommandVersion, Op: OpCreateVolume, Volume: &v})
	mustApply(t, s, Command{V: CommandVersion, Op: OpCreateSubsystem, Subsystem: &Subsystem{NQN: nqnA, Node: "n1"}})
	mustApply(t, s, Command{V: CommandVersion, Op: OpAddNamespace, NQN: nqnA, Name: "r"})
	return s
}

// applyRejected applies c, wants an error matching want, and checks that
// the state did not change.
func applyRejected(t *testing.T, s *State, c Command, want error, msg string) {
	t.Helper()
	before := snap(t, s)
	_, err := s.Apply(c)
	if !errors.Is(err, want) {
		t.Fatalf("%s (%s): err %v, want %v", msg, c.Op, err, want)
	}
	if !bytes.Equal(before, snap(t, s)) {
		t.Fatalf("%s (%s): rejected command changed the state", msg, c.Op)
	}
}

func states(v Volume) string {
	var b strings.Builder
	for _, r := range v.ReplicaList() {
		b.WriteString(r.Node + "=" + r.State + " ")
	}
	return strings.TrimSpace(b.String())
}

func replicaCmd(op Op, node, state string, epoch uint64) Command {
	return Command{V: CommandVersion, Op: op, Name: "r", NodeID: node, State: state, Epoch: epoch}
}

// TestReplicatedCreate: a 3-replica create records its copies in sync at
// epoch 1; placement errors name the rule.
func TestReplicatedCreate(t *testing.T) {
	s := cluster3(t)
	v := s.Volumes["r"]
	if v.Replicas != 3 || v.Epoch != 1 || v.Node != "n1" || states(v) != "n1=in-sync n2=in-sync n3=in-sync" {
		t.Fatalf("created %+v", v)
	}
	for _, r := range v.ReplicaSet {
		if r.Path != "r.img" {
			t.Fatalf("replica path %+v", r)
		}
	}
	if got := s.SubsystemNodes(nqnA); !reflect.DeepEqual(got, []string{"n1", "n2", "n3"}) {
		t.Fatalf("subsystem nodes %v", got)
	}
	if a := s.Subsystems[nqnA].ANA; !reflect.DeepEqual(a, map[string]string{"n1": ANAOptimized, "n2": ANAInaccessible, "n3": ANAInaccessible}) {
		t.Fatalf("ANA after export: %v", a)
	}
	mk := func(name string, rep int, nodes ...string) (Volume, error) {
		return NewVolume(VolumeSpec{Name: name, Size: 1 << 20, Node: "n1", Replicas: rep, ReplicaNodes: nodes}, hexID("u"+name), hexID("g"+name))
	}
	if _, err := mk("x", 4, "n2", "n3", "n4"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "want 1 to 3") {
		t.Fatalf("4 replicas: %v", err)
	}
	if _, err := mk("x", 3, "n2"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "need 2 nodes") {
		t.Fatalf("too few nodes: %v", err)
	}
	if _, err := mk("x", 2, "n1"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "two replicas on node n1") {
		t.Fatalf("replica on the owner's node: %v", err)
	}
	x, err := mk("x", 2, "n9")
	if err != nil {
		t.Fatal(err)
	}
	applyRejected(t, s, Command{V: CommandVersion, Op: OpCreateVolume, Volume: &x}, ErrNotFound, "replica on an unknown node")
	// "r.img" on n3 is volume r's: a volume named r elsewhere can't exist,
	// but a hand-made command reusing the path must be refused.
	y, _ := mk("y", 2, "n3")
	y.ReplicaSet[1].Path = "r.img"
	applyRejected(t, s, Command{V: CommandVersion, Op: OpCreateVolume, Volume: &y}, ErrConflict, "path of another volume on a replica node")
	// A command whose owner is not among its replicas.
	z, _ := mk("z", 2, "n3")
	z.Node = "n4"
	applyRejected(t, s, Command{V: CommandVersion, Op: OpCreateVolume, Volume: &z}, ErrConflict, "owner without a replica")
	applyRejected(t, s, Command{V: 1, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "r.img"}}, ErrVersion, "v2 op in a v1 command")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpRemoveNode, NodeID: "n3"}, ErrConflict, "removing a replica's node")
}

// TestEpochFencing: after a failover, the deposed owner can commit
// nothing about the volume's replicas (its epoch is stale), while the new
// owner can; a command without an epoch is invalid.
func TestEpochFencing(t *testing.T) {
	s := cluster3(t)
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n3", ReplicaFaulted, 1))
	res := mustApply(t, s, replicaCmd(OpFailover, "n2", "", 0))
	if res.Volume.Node != "n2" || res.Volume.Epoch != 2 || s.Volumes["r"].Epoch != 2 {
		t.Fatalf("after failover %+v", res.Volume)
	}
	// The old owner n1, partitioned, tries to fault n2 (the replica it
	// can no longer reach) so that it could go on alone: refused.
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1), ErrStaleEpoch, "deposed owner faults the new one")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n3", ReplicaSyncing, 1), ErrStaleEpoch, "deposed owner starts a rebuild")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpReportRebuild, Name: "r", NodeID: "n3", Epoch: 1, Rebuild: &Rebuild{Total: 1}}, ErrStaleEpoch, "deposed owner reports progress")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n1", ReplicaFaulted, 0), ErrInvalid, "no epoch")
	applyRejected(t, s, replicaCmd(OpFailover, "n1", "", 1), ErrStaleEpoch, "failover decided at an old epoch")
	// The new owner faults the old one.
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n1", ReplicaFaulted, 2))
	if got := states(s.Volumes["r"]); got != "n1=faulted n2=in-sync n3=faulted" {
		t.Fatalf("states %s", got)
	}
	if _, err := s.Apply(replicaCmd(OpSetReplicaState, "n1", ReplicaFaulted, 1)); !errors.Is(err, ErrStaleEpoch) {
		t.Fatalf("stale epoch is checked before the idempotent answer: %v", err)
	}
}

// TestReplicaInvariants: the owner is always in sync, the last in-sync
// copy never faults, a faulted copy rejoins only through a rebuild, and
// only an in-sync replica becomes owner.
func TestReplicaInvariants(t *testing.T) {
	s := cluster3(t)
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n1", ReplicaFaulted, 1), ErrConflict, "owner faults its own replica")
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1))
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1)) // a retry
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n3", ReplicaFaulted, 1)) // the only other in-sync copy: fine
	if got := states(s.Volumes["r"]); got != "n1=in-sync n2=faulted n3=faulted" {
		t.Fatalf("states %s", got)
	}
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n1", ReplicaFaulted, 1), ErrConflict, "last in-sync replica faults")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n1", ReplicaSyncing, 1), ErrConflict, "owner rebuilds itself")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaInSync, 1), ErrConflict, "faulted straight to in-sync")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n2", "broken", 1), ErrInvalid, "unknown state")
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n4", ReplicaFaulted, 1), ErrNotFound, "no replica there")
	applyRejected(t, s, replicaCmd(OpFailover, "n2", "", 0), ErrConflict, "failover to a faulted replica")
	applyRejected(t, s, replicaCmd(OpFailover, "n4", "", 0), ErrConflict, "failover to a node without a replica")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpReportRebuild, Name: "r", NodeID: "n2", Epoch: 1, Rebuild: &Rebuild{Total: 1}}, ErrConflict, "progress of a faulted replica")

	// n2 rebuilds: faulted → syncing (dirty regions) → progress → in-sync.
	c := replicaCmd(OpSetReplicaState, "n2", ReplicaSyncing, 1)
	c.Rebuild = &Rebuild{Total: 64 << 10}
	mustApply(t, s, c)
	applyRejected(t, s, replicaCmd(OpFailover, "n2", "", 0), ErrConflict, "failover to a syncing replica")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpReportRebuild, Name: "r", NodeID: "n2", Epoch: 1, Rebuild: &Rebuild{Copied: 2, Total: 1}}, ErrInvalid, "copied > total")
	at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	mustApply(t, s, Command{V: CommandVersion, Op: OpReportRebuild, Name: "r", NodeID: "n2", Epoch: 1, Rebuild: &Rebuild{Copied: 16 << 10, Total: 64 << 10, Rate: 16 << 10, Updated: at}})
	r, _ := s.Volumes["r"].Replica("n2")
	if r.Rebuild == nil || r.Rebuild.Percent() != 25 {
		t.Fatalf("progress %+v", r.Rebuild)
	}
	if eta, ok := r.Rebuild.ETA(); !ok || eta != 3*time.Second {
		t.Fatalf("eta %v %v", eta, ok)
	}
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaInSync, 1))
	if r, _ := s.Volumes["r"].Replica("n2"); r.State != ReplicaInSync || r.Rebuild != nil || r.Message != "" {
		t.Fatalf("rejoined %+v", r)
	}
	applyRejected(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaSyncing, 1), ErrConflict, "in-sync straight to syncing")

	// Remove and add.
	applyRejected(t, s, Command{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n1"}, ErrConflict, "remove the owner")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n4"}, ErrNotFound, "remove a replica that is not there")
	res := mustApply(t, s, Command{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n3"})
	if res.Volume.Replicas != 2 || states(*res.Volume) != "n1=in-sync n2=in-sync" {
		t.Fatalf("after remove %+v", res.Volume)
	}
	if _, ok := s.Subsystems[nqnA].ANA["n3"]; ok {
		t.Fatalf("removed replica's node keeps an ANA state: %v", s.Subsystems[nqnA].ANA)
	}
	add := Command{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "r.img"}}
	res = mustApply(t, s, add)
	r, _ = res.Volume.Replica("n4")
	if res.Volume.Replicas != 3 || r.State != ReplicaSyncing || r.Rebuild == nil || !r.Rebuild.Full || r.Rebuild.Total != 1<<20 {
		t.Fatalf("added %+v %+v", res.Volume, r)
	}
	if s.Subsystems[nqnA].ANA["n4"] != ANAInaccessible {
		t.Fatalf("new replica's ANA %v", s.Subsystems[nqnA].ANA)
	}
	mustApply(t, s, add) // a retry: the same answer
	applyRejected(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "other.img"}}, ErrExists, "second replica on a node")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n3", Path: "r.img"}}, ErrConflict, "a fourth replica")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n3", Path: "../r.img"}}, ErrConflict, "a fourth replica, bad path")
	mustApply(t, s, Command{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n4"}) // syncing: removable
	applyRejected(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n3", Path: "../r.img"}}, ErrInvalid, "bad path")
}

// TestFailoverANA: a failover moves the owner, bumps the epoch and sets
// the subsystem's ANA states in the same command, so that exactly one
// node is optimized; an unplanned one faults the lost owner's copy.
// Volumes sharing the subsystem move together or not at all.
func TestFailoverANA(t *testing.T) {
	s := cluster3(t)
	optimized := func() []string {
		var o []string
		for n, st := range s.Subsystems[nqnA].ANA {
			if st == ANAOptimized || st == ANANonOptimized {
				o = append(o, n)
			}
		}
		return o
	}
	applyRejected(t, s, Command{V: CommandVersion, Op: OpSetANAState, NQN: nqnA, NodeID: "n2", State: ANAOptimized}, ErrConflict, "a second optimized node")
	res := mustApply(t, s, Command{V: CommandVersion, Op: OpFailover, Name: "r", NodeID: "n3", Epoch: 1, State: ReplicaFaulted, Message: "node n1 lost"})
	v := s.Volumes["r"]
	if v.Node != "n3" || v.Epoch != 2 || states(v) != "n1=faulted n2=in-sync n3=in-sync" || res.Volume.Node != "n3" {
		t.Fatalf("after failover %+v", v)
	}
	if r, _ := v.Replica("n1"); r.Message != "node n1 lost" {
		t.Fatalf("old owner's replica %+v", r)
	}
	sub := s.Subsystems[nqnA]
	if sub.Node != "n3" || !reflect.DeepEqual(optimized(), []string{"n3"}) || sub.ANA["n1"] != ANAInaccessible || sub.ANA["n2"] != ANAInaccessible {
		t.Fatalf("subsystem after failover %+v", sub)
	}
	mustApply(t, s, Command{V: CommandVersion, Op: OpFailover, Name: "r", NodeID: "n3", Epoch: 1}) // a retry
	if s.Volumes["r"].Epoch != 2 {
		t.Fatal("a retried failover bumped the epoch again")
	}

	// A second volume in the subsystem, with no replica on n1: the group
	// cannot move to n1 (n1 is faulted anyway) nor to n4.
	w, _ := NewVolume(VolumeSpec{Name: "w", Size: 1 << 20, Node: "n3", Replicas: 2, ReplicaNodes: []string{"n4"}}, hexID("uw"), hexID("gw"))
	mustApply(t, s, Command{V: CommandVersion, Op: OpCreateVolume, Volume: &w})
	mustApply(t, s, Command{V: CommandVersion, Op: OpAddNamespace, NQN: nqnA, Name: "w"})
	if !reflect.DeepEqual(optimized(), []string{"n3"}) || s.Subsystems[nqnA].ANA["n4"] != ANAInaccessible {
		t.Fatalf("ANA after second export %v", s.Subsystems[nqnA].ANA)
	}
	applyRejected(t, s, replicaCmd(OpFailover, "n2", "", 0), ErrConflict, "group member without a replica on the target")
	if _, err := s.Apply(replicaCmd(OpFailover, "n2", "", 0)); err == nil || !strings.Contains(err.Error(), `volume "w" shares subsystem`) {
		t.Fatalf("message should name the volume that cannot move: %v", err)
	}
	// Give w a copy on n2 and bring it in sync: now both move.
	mustApply(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "w", Replica: &Replica{Node: "n2", Path: "w.img"}})
	mustApply(t, s, Command{V: CommandVersion, Op: OpSetReplicaState, Name: "w", NodeID: "n2", State: ReplicaInSync, Epoch: 1})
	mustApply(t, s, replicaCmd(OpFailover, "n2", "", 0))
	if s.Volumes["r"].Node != "n2" || s.Volumes["w"].Node != "n2" || s.Volumes["r"].Epoch != 3 || s.Volumes["w"].Epoch != 2 {
		t.Fatalf("group failover: r %+v w %+v", s.Volumes["r"], s.Volumes["w"])
	}
	if !reflect.DeepEqual(optimized(), []string{"n2"}) || s.Subsystems[nqnA].Node != "n2" {
		t.Fatalf("ANA after group failover %v", s.Subsystems[nqnA])
	}
}

// TestPreReplicationEntries: a version 1 snapshot and version 1 commands
// (no replicas, no epoch) still read and apply; their volume has one
// implicit in-sync replica at epoch 1 and can be given more.
func TestPreReplicationEntries(t *testing.T) {
	const v1snap = `{"v":1,"state":{"nodes":{"n1":{"id":"n1","api_addr":"a","raft_addr":"r"},"n2":{"id":"n2","api_addr":"b","raft_addr":"s"}},` +
		`"volumes":{"old":{"name":"old","uuid":"` + "0123456789abcdef0123456789abcdef" + `","nguid":"` + "fedcba9876543210fedcba9876543210" + `","size":1048576,"block_size":512,"path":"old.img","node":"n1","state":"online"}},` +
		`"subsystems":{},"index":7}}`
	s, err := ReadSnapshot(strings.NewReader(v1snap))
	if err != nil {
		t.Fatal(err)
	}
	v := s.Volumes["old"]
	if v.DesiredReplicas() != 1 || v.OwnerEpoch() != 1 || states(v) != "n1=in-sync" {
		t.Fatalf("old volume %+v", v)
	}
	c, err := DecodeCommand([]byte(`{"v":1,"op":"resize_volume","name":"old","size":2097152}`))
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, s, c)
	mustApply(t, s, Command{V: CommandVersion, Op: OpAddReplica, Name: "old", Replica: &Replica{Node: "n2", Path: "old.img"}})
	mustApply(t, s, Command{V: CommandVersion, Op: OpSetReplicaState, Name: "old", NodeID: "n2", State: ReplicaInSync, Epoch: 1})
	v = s.Volumes["old"]
	if v.Replicas != 2 || v.Epoch != 1 || states(v) != "n1=in-sync n2=in-sync" {
		t.Fatalf("after add %+v", v)
	}
	if _, err := DecodeCommand([]byte(`{"v":3,"op":"failover"}`)); !errors.Is(err, ErrVersion) {
		t.Fatalf("future command: %v", err)
	}
}

// TestReplicaCommandJSON: the new commands' log entries, byte for byte
// (the raft log is forever: field names may never change), and back.
func TestReplicaCommandJSON(t *testing.T) {
	at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		c    Command
		want string
	}{
		{Command{Op: OpSetReplicaState, Name: "r", NodeID: "n2", State: ReplicaFaulted, Message: "write failed", Epoch: 3},
			`{"v":2,"op":"set_replica_state","node_id":"n2","name":"r","state":"faulted","message":"write failed","epoch":3}`},
		{Command{Op: OpSetReplicaState, Name: "r", NodeID: "n2", State: ReplicaSyncing, Epoch: 3, Rebuild: &Rebuild{Total: 4096}},
			`{"v":2,"op":"set_replica_state","node_id":"n2","name":"r","state":"syncing","epoch":3,"rebuild":{"copied":0,"total":4096}}`},
		{Command{Op: OpReportRebuild, Name: "r", NodeID: "n2", Epoch: 3, Rebuild: &Rebuild{Full: true, Copied: 1024, Total: 4096, Rate: 512, Updated: at}},
			`{"v":2,"op":"report_rebuild","node_id":"n2","name":"r","epoch":3,"rebuild":{"full":true,"copied":1024,"total":4096,"rate":512,"updated":"2026-11-24T22:00:00Z"}}`},
		{Command{Op: OpReportResync, Name: "r", Epoch: 3, Rebuild: &Rebuild{Copied: 2048, Total: 8192, Rate: 1024, Updated: at}},
			`{"v":2,"op":"report_resync","name":"r","epoch":3,"rebuild":{"copied":2048,"total":8192,"rate":1024,"updated":"2026-11-24T22:00:00Z"}}`},
		{Command{Op: OpReportResync, Name: "r", Epoch: 3},
			`{"v":2,"op":"report_resync","name":"r","epoch":3}`},
		{Command{Op: OpFailover, Name: "r", NodeID: "n3", Epoch: 3, State: ReplicaFaulted, Message: "owner lost"},
			`{"v":2,"op":"failover","node_id":"n3","name":"r","state":"faulted","message":"owner lost","epoch":3}`},
		{Command{Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "r.img"}},
			`{"v":2,"op":"add_replica","name":"r","replica":{"node":"n4","path":"r.img","state":""}}`},
		{Command{Op: OpRemoveReplica, Name: "r", NodeID: "n4"},
			`{"v":2,"op":"remove_replica","node_id":"n4","name":"r"}`},
	} {
		b, err := tc.c.Encode()
		if err != nil || string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.c.Op, b, tc.want)
			continue
		}
		back, err := DecodeCommand(b)
		tc.c.V = CommandVersion
		if err != nil || !reflect.DeepEqual(back, tc.c) {
			t.Errorf("%s: round trip %+v %v", tc.c.Op, back, err)
		}
	}
	// The volume as the snapshot stores it.
	s := cluster3(t)
	var got map[string]any
	b, _ := json.Marshal(s.Volumes["r"])
	json.Unmarshal(b, &got)
	if got["replicas"] != float64(3) || got["epoch"] != float64(1) || len(got["replica_set"].([]any)) != 3 {
		t.Fatalf("volume JSON %s", b)
	}
	// The snapshot round trip keeps replicas and epochs.
	r, err := ReadSnapshot(bytes.NewReader(snap(t, s)))
	if err != nil || !reflect.DeepEqual(r.Volumes["r"], s.Volumes["r"]) {
		t.Fatalf("snapshot round trip %v", err)
	}
}

// TestPurgeReplicas: a replicated tombstone is forgotten only when every
// replica node has removed its file.
func TestPurgeReplicas(t *testing.T) {
	s := cluster3(t)
	mustApply(t, s, Command{V: CommandVersion, Op: OpRemoveNamespace, NQN: nqnA, NSID: 1})
	mustApply(t, s, Command{V: CommandVersion, Op: OpDeleteVolume, Name: "r"})
	for i, n := range []string{"n2", "n2", "n1", "n9"} {
		mustApply(t, s, Command{V: CommandVersion, Op: OpPurgeVolume, Name: "r", NodeID: n})
		if _, ok := s.Volumes["r"]; !ok {
			t.Fatalf("step %d: forgotten while n3 still has its file", i)
		}
	}
	if got := states(s.Volumes["r"]); got != "n3=in-sync" {
		t.Fatalf("tombstone replicas %s", got)
	}
	mustApply(t, s, Command{V: CommandVersion, Op: OpPurgeVolume, Name: "r", NodeID: "n3"})
	if _, ok := s.Volumes["r"]; ok {
		t.Fatal("not forgotten after the last replica's purge")
	}
}

// TestDeterministicReplicas: the replica ops replay to identical states.
func TestDeterministicReplicas(t *testing.T) {
	run := func() []byte {
		s := cluster3(t)
		for _, c := range []Command{
			replicaCmd(OpSetReplicaState, "n3", ReplicaFaulted, 1),
			{V: CommandVersion, Op: OpFailover, Name: "r", NodeID: "n2", Epoch: 1, State: ReplicaFaulted},
			replicaCmd(OpSetReplicaState, "n3", ReplicaSyncing, 2),
			{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n1"},
			{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "r.img"}},
		} {
			b, _ := c.Encode()
			d, err := DecodeCommand(b)
			if err != nil {
				t.Fatal(err)
			}
			s.Apply(d)
		}
		return snap(t, s)
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte(`"n4"`)) {
		t.Fatalf("replay differs or incomplete:\n%s\n%s", a, b)
	}
}

func TestPickNewOwner(t *testing.T) {
	s := cluster3(t)
	v := s.Volumes["r"]
	up := func(nodes ...string) func(string) bool {
		return func(n string) bool { return strings.Contains(" "+strings.Join(nodes, " ")+" ", " "+n+" ") }
	}
	for _, tc := range []struct {
		live []string
		want string
	}{
		{[]string{"n2", "n3"}, "n2"},
		{[]string{"n3"}, "n3"},
		{[]string{"n1"}, ""}, // only the owner itself
		{nil, ""},
		{[]string{"n4"}, ""}, // no replica there
	} {
		got, ok := PickNewOwner(v, up(tc.live...))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("live %v: %q %v, want %q", tc.live, got, ok, tc.want)
		}
	}
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1))
	if got, _ := PickNewOwner(s.Volumes["r"], up("n2", "n3")); got != "n3" {
		t.Fatalf("faulted replica chosen: %q", got)
	}
	// FailoverCommands: n1 (owner of r) is down; the command applies.
	down := up // the lost nodes: the same membership test
	if cmds := s.FailoverCommands(func(string) bool { return false }, up("n1", "n2", "n3", "n4"), ""); len(cmds) != 0 {
		t.Fatalf("owner not lost, yet %+v", cmds)
	}
	cmds := s.FailoverCommands(down("n1"), up("n2", "n3", "n4"), "node n1 unreachable")
	if len(cmds) != 1 || cmds[0].NodeID != "n3" || cmds[0].Epoch != 1 || cmds[0].State != ReplicaFaulted {
		t.Fatalf("failover commands %+v", cmds)
	}
	mustApply(t, s, cmds[0])
	if s.Volumes["r"].Node != "n3" || len(s.FailoverCommands(down("n1"), up("n2", "n3", "n4"), "")) != 0 {
		t.Fatalf("after automatic failover %+v", s.Volumes["r"])
	}
	if cmds := s.FailoverCommands(down("n3"), up("n1", "n2"), ""); len(cmds) != 0 {
		t.Fatalf("no in-sync replica is live, yet %+v", cmds)
	}
}

func TestPlaceReplicas(t *testing.T) {
	s := cluster3(t) // n1, n2, n3 hold r; n4 holds nothing
	all := func(string) bool { return true }
	got, err := s.PlaceReplicas("n1", 2, 1<<20, all)
	if err != nil || !reflect.DeepEqual(got, []string{"n4", "n2"}) {
		t.Fatalf("least loaded first: %v %v", got, err)
	}
	n4 := s.Nodes["n4"]
	n4.VolumeFSBytes = 1 << 20
	mustApply(t, s, Command{V: CommandVersion, Op: OpRegisterNode, Node: &n4})
	if got, err := s.PlaceReplicas("n1", 1, 2<<20, all); err != nil || got[0] != "n2" {
		t.Fatalf("too small a filesystem: %v %v", got, err)
	}
	_, err = s.PlaceReplicas("n1", 2, 1<<20, func(n string) bool { return n != "n2" && n != "n3" })
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "n2 (not reachable)") || !strings.Contains(err.Error(), "1 eligible") {
		t.Fatalf("not enough nodes: %v", err)
	}
}

// FuzzReplicaApply: any command applied to a replicated volume's state
// never panics, and whatever it does leaves the replica invariants whole.
func FuzzReplicaApply(f *testing.F) {
	for _, c := range []Command{
		replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1),
		replicaCmd(OpFailover, "n3", ReplicaFaulted, 1),
		{V: CommandVersion, Op: OpReportRebuild, Name: "r", NodeID: "n2", Epoch: 1, Rebuild: &Rebuild{Copied: 1, Total: 2}},
		{V: CommandVersion, Op: OpReportResync, Name: "r", Epoch: 1, Rebuild: &Rebuild{Copied: 1, Total: 2}},
		{V: CommandVersion, Op: OpReportResync, Name: "r", Epoch: 1},
		{V: CommandVersion, Op: OpAddReplica, Name: "r", Replica: &Replica{Node: "n4", Path: "r.img"}},
		{V: CommandVersion, Op: OpRemoveReplica, Name: "r", NodeID: "n3"},
		{V: CommandVersion, Op: OpPurgeVolume, Name: "r", NodeID: "n3"},
		{V: CommandVersion, Op: OpSetANAState, NQN: nqnA, NodeID: "n2", State: ANAOptimized},
	} {
		b, _ := c.Encode()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCommand(b)
		if err != nil {
			return
		}
		s := cluster3(t)
		if c.Op == OpSetReplicaState && c.NodeID == "n2" && c.State == ReplicaSyncing {
			s.Apply(replicaCmd(OpSetReplicaState, "n2", ReplicaFaulted, 1))
		}
		if c.Op == OpFailover {
			s.Apply(Command{V: CommandVersion, Op: OpReportResync, Name: "r", Epoch: 1, Rebuild: &Rebuild{Total: 1}})
		}
		owner := s.Volumes["r"].Node
		s.Apply(c) // must not panic
		if v := s.Volumes["r"]; v.Node != owner && v.Resync != nil {
			t.Fatalf("%s moved the owner %s → %s and kept the old owner's resync", c.Op, owner, v.Node)
		}
		for _, v := range s.Volumes {
			if v.State == VolumeDeleting {
				continue
			}
			if err := v.checkReplicas(); err != nil {
				t.Fatalf("%s left a broken volume: %v", c.Op, err)
			}
		}
		optimized := 0
		for _, st := range s.Subsystems[nqnA].ANA {
			if st == ANAOptimized || st == ANANonOptimized {
				optimized++
			}
		}
		if optimized > 1 {
			t.Fatalf("%s: two optimized nodes: %v", c.Op, s.Subsystems[nqnA].ANA)
		}
	})
}

// TestResyncProgress: the owner records its resync's progress (fenced by
// its epoch like every owner command), clears it when the resync ends,
// and a failover clears it in the same command (the old owner's resync
// is abandoned; the new owner starts its own from its copy).
func TestResyncProgress(t *testing.T) {
	s := cluster3(t)
	at := time.Date(2026, 11, 24, 22, 0, 0, 0, time.UTC)
	rep := func(epoch uint64, rb *Rebuild) Command {
		return Command{V: CommandVersion, Op: OpReportResync, Name: "r", Epoch: epoch, Rebuild: rb}
	}
	res := mustApply(t, s, rep(1, &Rebuild{Copied: 1 << 20, Total: 4 << 20, Rate: 1 << 20, Updated: at}))
	rs := s.Volumes["r"].Resync
	if rs == nil || !rs.Full || rs.Percent() != 25 || res.Volume.Resync == nil || res.Volume.Resync == rs {
		t.Fatalf("recorded %+v, answered %+v", rs, res.Volume.Resync)
	}
	if eta, ok := rs.ETA(); !ok || eta != 3*time.Second {
		t.Fatalf("eta %v %v", eta, ok)
	}
	if c := s.Clone(); c.Volumes["r"].Resync == rs {
		t.Fatal("Clone shares the resync record")
	}
	applyRejected(t, s, rep(1, &Rebuild{Copied: 5, Total: 4}), ErrInvalid, "copied > total")
	applyRejected(t, s, rep(0, &Rebuild{Total: 4}), ErrInvalid, "no epoch")
	applyRejected(t, s, rep(2, &Rebuild{Total: 4}), ErrStaleEpoch, "a future epoch")
	applyRejected(t, s, Command{V: 1, Op: OpReportResync, Name: "r", Epoch: 1}, ErrVersion, "v2 op in a v1 command")
	applyRejected(t, s, Command{V: CommandVersion, Op: OpReportResync, Name: "nope", Epoch: 1}, ErrNotFound, "no such volume")

	// Ended: cleared (and clearing again is harmless).
	mustApply(t, s, rep(1, nil))
	mustApply(t, s, rep(1, nil))
	if s.Volumes["r"].Resync != nil {
		t.Fatalf("not cleared: %+v", s.Volumes["r"].Resync)
	}

	// A failover abandons the old owner's resync; the old owner can
	// neither report nor clear any more; the new owner can.
	mustApply(t, s, rep(1, &Rebuild{Copied: 1, Total: 4 << 20}))
	mustApply(t, s, Command{V: CommandVersion, Op: OpFailover, Name: "r", NodeID: "n2", Epoch: 1, State: ReplicaFaulted, Message: "owner lost"})
	if v := s.Volumes["r"]; v.Resync != nil || v.Epoch != 2 {
		t.Fatalf("after failover %+v", v)
	}
	applyRejected(t, s, rep(1, &Rebuild{Copied: 2, Total: 4 << 20}), ErrStaleEpoch, "deposed owner reports its resync")
	mustApply(t, s, rep(2, &Rebuild{Total: 4 << 20}))

	// With no other in-sync copy there is nothing to resync.
	mustApply(t, s, rep(2, nil))
	mustApply(t, s, replicaCmd(OpSetReplicaState, "n3", ReplicaFaulted, 2))
	applyRejected(t, s, rep(2, &Rebuild{Total: 4 << 20}), ErrConflict, "resync with the owner the only in-sync copy")
}

// TestVolumeStateEpoch: a volume state report that carries an epoch is
// fenced like the replica ops (one without is taken, as before epochs).
func TestVolumeStateEpoch(t *testing.T) {
	s := cluster3(t)
	mustApply(t, s, replicaCmd(OpFailover, "n2", "", 0))
	applyRejected(t, s, Command{V: CommandVersion, Op: OpSetVolumeState, Name: "r", State: VolumeError, Message: "old owner", Epoch: 1}, ErrStaleEpoch, "deposed owner reports the volume")
	mustApply(t, s, Command{V: CommandVersion, Op: OpSetVolumeState, Name: "r", State: VolumeOnline, Epoch: 2})
	mustApply(t, s, Command{V: CommandVersion, Op: OpSetVolumeState, Name: "r", State: VolumeOnline})
}

// TestWrittenVersions: commands and snapshots that use nothing of
// replication are written as version 1, so that nodes from before it
// still apply and restore them; the rest as version 2.
func TestWrittenVersions(t *testing.T) {
	single, _ := NewVolume(VolumeSpec{Name: "s", Size: 4096, Node: "n1"}, hexID("us"), hexID("gs"))
	multi, _ := NewVolume(VolumeSpec{Name: "m", Size: 4096, Node: "n1", Replicas: 2, ReplicaNodes: []string{"n2"}}, hexID("um"), hexID("gm"))
	for _, tc := range []struct {
		c    Command
		want int
	}{
		{Command{Op: OpCreateVolume, Volume: &single}, 1},
		{Command{Op: OpCreateVolume, Volume: &multi}, 2},
		{Command{Op: OpSetVolumeState, Name: "s", State: VolumeOnline}, 1},
		{Command{Op: OpSetVolumeState, Name: "s", State: VolumeOnline, Epoch: 1}, 2},
		{Command{Op: OpPurgeVolume, Name: "s"}, 1},
		{Command{Op: OpPurgeVolume, Name: "s", NodeID: "n2"}, 2},
		{Command{Op: OpRemoveReplica, Name: "m", NodeID: "n2"}, 2},
		{Command{Op: OpReportResync, Name: "m"}, 2},
		{Command{Op: OpRegisterNode, Node: &Node{ID: "n1", CNTLIDIndex: 3}}, 1},
	} {
		b, _ := tc.c.Encode()
		if c, err := DecodeCommand(b); err != nil || c.V != tc.want {
			t.Errorf("%s: written as version %d (%v), want %d", tc.c.Op, c.V, err, tc.want)
		}
	}
	s := withNode(t, 0)
	if err := create(s, &single); err != nil {
		t.Fatal(err)
	}
	if b := snap(t, s); !bytes.HasPrefix(b, []byte(`{"v":1,`)) {
		t.Fatalf("snapshot without replication: %.20s", b)
	}
	if b := snap(t, cluster3(t)); !bytes.HasPrefix(b, []byte(`{"v":2,`)) {
		t.Fatalf("snapshot with a replicated volume: %.20s", b)
	}
}

// TestReplicaNames: the replica subsystem and owner host NQNs are valid
// NQNs for the longest names, and the owner's changes with the epoch.
func TestReplicaNames(t *testing.T) {
	long := strings.Repeat("v", MaxNameLength)
	for _, n := range []string{ReplicaNQN(long), OwnerHostNQN(long, ^uint64(0)), ReplicaNQN("a"), OwnerHostNQN("n1", 1)} {
		if !nvme.ValidNQN(n) {
			t.Errorf("%q is not a valid NQN", n)
		}
	}
	if OwnerHostNQN("n1", 1) == OwnerHostNQN("n1", 2) {
		t.Fatal("the owner's host NQN does not change with the epoch")
	}
}
