package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestThreeNodesInProcess: volumes created through any node are visible
// on all and come online on their owner; a follower cut off from raft
// lags and converges after it rejoins; the leader stops, a new one is
// elected, writes continue and nothing committed is lost; the old leader
// restarts from its snapshot and catches up.
func TestThreeNodesInProcess(t *testing.T) {
	ms := startCluster(t, 3)
	var want []string
	create := func(via *member, name, owner string) {
		t.Helper()
		v, err := via.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: name, Size: 1 << 20, Node: owner})
		if err != nil {
			t.Fatalf("create %s via %s: %v", name, via.id, err)
		}
		if v.Node != owner || v.State != catalog.VolumeCreating {
			t.Fatalf("created %+v", v)
		}
		want = append(want, name)
		slices.Sort(want)
	}
	for i, via := range ms {
		create(via, fmt.Sprintf("vol-%d", i), ms[(i+1)%3].id)
	}
	eventually(t, 20*time.Second, "volumes visible on every node", sameVolumes(t, ms, want))
	eventually(t, 20*time.Second, "owners report volumes online", func() bool {
		vs, err := ms[0].c.Volumes(context.Background())
		if err != nil {
			return false
		}
		for _, v := range vs {
			if v.State != catalog.VolumeOnline {
				return false
			}
		}
		return true
	})
	for i := range ms {
		owner := ms[(i+1)%3]
		if _, err := os.Stat(filepath.Join(owner.dir, "volumes", fmt.Sprintf("vol-%d.img", i))); err != nil {
			t.Errorf("backing file on owner: %v", err)
		}
	}
	// Errors are JSON with the right status, on a follower too.
	if _, err := ms[2].c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "vol-0", Size: 1 << 20}); !errors.Is(err, catalog.ErrExists) {
		t.Fatalf("duplicate create: %v", err)
	} else if ae := (*api.Error)(nil); !errors.As(err, &ae) || ae.Status != 409 {
		t.Fatalf("duplicate create: %#v", err)
	}
	if _, err := ms[1].c.Volume(ctx(t), "nope"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("get missing: %v", err)
	}

	// Cut a follower off, write, heal: it converges.
	lead := leaderOf(t, ms)
	var cut *member
	for _, m := range ms {
		if m != lead {
			cut = m
			break
		}
	}
	cut.layer.setCut(true)
	for i := range 80 { // past SnapshotThreshold: the laggard may need a snapshot
		create(lead, fmt.Sprintf("p-%03d", i), lead.id)
	}
	if slices.Equal(volumeNames(t, cut), want) {
		t.Fatal("cut-off follower saw the writes")
	}
	cut.layer.setCut(false)
	eventually(t, 30*time.Second, "cut-off follower converges", sameVolumes(t, ms, want))

	// Stop the leader: a new one is elected; writes continue; nothing lost.
	lead = leaderOf(t, ms)
	old := lead
	t0 := time.Now()
	old.stop(t)
	var rest []*member
	for _, m := range ms {
		if m != old {
			rest = append(rest, m)
		}
	}
	newLead := leaderOf(t, rest)
	t.Logf("new leader %s after %v", newLead.id, time.Since(t0))
	create(rest[0], "after-failover", rest[1].id)
	eventually(t, 20*time.Second, "survivors agree", sameVolumes(t, rest, want))

	// Restart the old leader from its data dir: it restores its snapshot
	// and catches up.
	restarted := startMember(t, old.id, old.dir, old.raftAddr, false, nil)
	*old = *restarted
	eventually(t, 30*time.Second, "restarted node catches up", sameVolumes(t, ms, want))
	if entries, _ := os.ReadDir(filepath.Join(old.dir, "raft", "snapshots")); len(entries) == 0 {
		t.Error("no snapshot on disk")
	}
}

// TestSnapshotRestore: a node's snapshot, restored into a fresh FSM
// through raft (a new node joining after the log was compacted), yields
// the same catalogue.
func TestSnapshotRestore(t *testing.T) {
	ms := startCluster(t, 1)
	for i := range 100 {
		if _, err := ms[0].c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: fmt.Sprintf("s-%03d", i), Size: 4096}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms[0].c.Snapshot(ctx(t)); err != nil {
		t.Fatal(err)
	}
	n2 := startMember(t, "n2", t.TempDir(), "", false, []string{ms[0].a.APIAddr()})
	t.Cleanup(func() { n2.stop(t) })
	eventually(t, 30*time.Second, "joiner restores the snapshot and catches up", func() bool {
		return slices.Equal(volumeNames(t, n2), volumeNames(t, ms[0]))
	})
	// Every volume comes online on n1 (more log entries after the
	// snapshot); then both catalogues are byte-identical.
	eventually(t, 30*time.Second, "catalogues identical", func() bool {
		var a, b bytes.Buffer
		ms[0].a.Node.View(func(st *catalog.State) { s := st.Clone(); s.Index = 0; s.WriteSnapshot(&a) })
		n2.a.Node.View(func(st *catalog.State) { s := st.Clone(); s.Index = 0; s.WriteSnapshot(&b) })
		return bytes.Equal(a.Bytes(), b.Bytes()) && bytes.Contains(a.Bytes(), []byte(`"state":"online"`)) &&
			!bytes.Contains(a.Bytes(), []byte(`"state":"creating"`))
	})
}

// TestEndToEnd: a volume and subsystem created through node A's API,
// owned by node B; the initiator discovers it through A's discovery
// service, connects to B, writes and reads back; a resize reaches the
// host; delete removes the data on B.
func TestEndToEnd(t *testing.T) {
	ms := startCluster(t, 3)
	a, b := ms[0], ms[1]
	const nqn = "nqn.2026-11.io.rdmablk:cluster-e2e"
	c := a.c
	if _, err := c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "e2e", Size: 8 << 20, Node: b.id}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSubsystem(ctx(t), api.CreateSubsystemRequest{NQN: nqn, Node: b.id, AllowAnyHost: true}); err != nil {
		t.Fatal(err)
	}
	nsid, err := c.AddNamespace(ctx(t), nqn, 0, "e2e")
	if err != nil || nsid != 1 {
		t.Fatalf("add namespace: %d %v", nsid, err)
	}
	opts := initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), IOQueues: 2, QueueDepth: 16}
	var addr string
	eventually(t, 20*time.Second, "A's discovery lists the subsystem on B", func() bool {
		es, err := initiator.Discover(ctx(t), a.dataAddr(), opts)
		if err != nil {
			return false
		}
		for _, e := range es {
			if e.SubNQN == nqn {
				addr = e.TrAddr + ":" + e.TrSvcID
				return true
			}
		}
		return false
	})
	if addr != b.dataAddr() {
		t.Fatalf("discovery points at %s, B listens on %s", addr, b.dataAddr())
	}
	var ctrl *initiator.Controller
	var ns *initiator.Namespace
	eventually(t, 20*time.Second, "connect to B and see namespace 1", func() bool {
		if ctrl, err = initiator.Connect(ctx(t), addr, nqn, opts); err != nil {
			return false
		}
		if ns, err = ctrl.Namespace(1); err != nil {
			ctrl.Close()
			return false
		}
		return true
	})
	if ns.Size() != 8<<20 {
		t.Fatalf("namespace size %d", ns.Size())
	}
	pattern := bytes.Repeat([]byte("rdmablk cluster!"), 4096/16*8)
	if _, err := ns.WriteAt(pattern, 1<<20); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(pattern))
	if _, err := ns.ReadAt(got, 1<<20); err != nil || !bytes.Equal(got, pattern) {
		t.Fatalf("read back: %v", err)
	}
	ctrl.Close()

	// Resize through C: B grows the file and swaps the backend; a new
	// controller sees the new size and the old data.
	if _, err := ms[2].c.ResizeVolume(ctx(t), "e2e", 16<<20); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "host sees the new size", func() bool {
		c2, err := initiator.Connect(ctx(t), addr, nqn, opts)
		if err != nil {
			return false
		}
		defer c2.Close()
		ns2, err := c2.Namespace(1)
		if err != nil || ns2.Size() != 16<<20 {
			return false
		}
		if _, err := ns2.ReadAt(got, 1<<20); err != nil || !bytes.Equal(got, pattern) {
			t.Fatalf("after resize: %v", err)
		}
		return true
	})

	// Deleting an exported volume is refused; after unexporting it goes,
	// and B removes the backing file.
	if err := c.DeleteVolume(ctx(t), "e2e"); !errors.Is(err, catalog.ErrConflict) {
		t.Fatalf("delete exported volume: %v", err)
	}
	if err := c.DeleteSubsystem(ctx(t), nqn); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteVolume(ctx(t), "e2e"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "tombstone purged and file removed on B", func() bool {
		_, err := c.Volume(context.Background(), "e2e")
		_, ferr := os.Stat(filepath.Join(b.dir, "volumes", "e2e.img"))
		return errors.Is(err, catalog.ErrNotFound) && errors.Is(ferr, os.ErrNotExist)
	})
	if _, ok := b.tgt.Subsystem(nqn); ok {
		t.Fatal("subsystem still in B's target")
	}
}
