package reconcile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// keptMem is a node's "file": it outlives the backends opened on it
// (Close is a no-op), as a file outlives its descriptors.
type keptMem struct{ *mem.Backend }

func (keptMem) Close() error { return nil }

// fakeLeg is the owner's view of a copy on another node's target: every
// operation first checks that the node's target still serves the replica
// subsystem to this host NQN (what a controller connected as that host
// would find), then goes to the node's copy. down fails everything (the
// node unreachable).
type fakeLeg struct {
	tgt       *target.Target
	nqn, host string
	b         blockdev.Backend
	down      *atomic.Bool
	// gen is the node's incarnation when the leg connected: a leg from
	// before a restart (nodeGen moved on) fails like a dead connection.
	gen     int64
	nodeGen *atomic.Int64
}

func (l *fakeLeg) ok() error {
	if l.down.Load() {
		return errors.New("fake leg: node down")
	}
	if l.nodeGen.Load() != l.gen {
		return errors.New("fake leg: connection from before the node restarted")
	}
	ts, found := l.tgt.Subsystem(l.nqn)
	if !found || !slices.Contains(ts.Hosts(), l.host) {
		return fmt.Errorf("fake leg: %s no longer admits %s", l.nqn, l.host)
	}
	return nil
}
func (l *fakeLeg) BlockSize() int { return l.b.BlockSize() }
func (l *fakeLeg) Blocks() uint64 { return l.b.Blocks() }
func (l *fakeLeg) ReadAt(bufs [][]byte, lba uint64) error {
	if err := l.ok(); err != nil {
		return err
	}
	return l.b.ReadAt(bufs, lba)
}
func (l *fakeLeg) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	if err := l.ok(); err != nil {
		return err
	}
	return l.b.WriteAt(bufs, lba, f)
}
func (l *fakeLeg) Flush() error {
	if err := l.ok(); err != nil {
		return err
	}
	return l.b.Flush()
}
func (l *fakeLeg) WriteZeroes(lba, n uint64) error {
	if err := l.ok(); err != nil {
		return err
	}
	return l.b.WriteZeroes(lba, n)
}
func (l *fakeLeg) Discard(lba, n uint64) error {
	if err := l.ok(); err != nil {
		return err
	}
	return l.b.Discard(lba, n)
}

// Close is the final flush a real leg (internal/replica) makes.
func (l *fakeLeg) Close() error { return l.ok() }

// cluster is several reconcilers, one per node, over one catalogue
// (leader), each with its own target, and "files" that persist.
type cluster struct {
	l     *leader
	mu    sync.Mutex
	files map[string]*mem.Backend // node/path
	nodes map[string]*nodeRig
}

type nodeRig struct {
	id   string
	tgt  *target.Target
	r    *Reconciler
	down atomic.Bool
	gen  atomic.Int64 // incarnation (a restart increments it)
}

const exportNQN = "nqn.2026-11.io.rdmablk:rep"

func newCluster(t *testing.T, ids ...string) *cluster {
	t.Helper()
	c := &cluster{l: &leader{st: catalog.New()}, files: map[string]*mem.Backend{}, nodes: map[string]*nodeRig{}}
	for _, id := range ids {
		c.l.apply(t, catalog.Command{Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: id, APIAddr: id + ":1", RaftAddr: id + ":2"}})
	}
	for _, id := range ids {
		n := &nodeRig{id: id}
		n.tgt = target.New(target.Options{Workers: 1, Logger: slog.New(slog.DiscardHandler)})
		if err := n.tgt.AddPort(target.Port{ID: 1, TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4, TrAddr: "127.0.0.1", TrSvcID: "4420",
			Caps: target.TransportCaps{MaxDataTransfer: 1 << 20, MaxQueueDepth: 128, MaxSGLDescriptors: 1}}); err != nil {
			t.Fatal(err)
		}
		n.r = New(Options{NodeID: id, VolumeDir: t.TempDir(), Target: n.tgt, Catalog: c.l, Proposer: c.l,
			Logger: slog.New(slog.DiscardHandler), RebuildBytesPerSecond: -1,
			Open: func(path string, size int64, bs int) (blockdev.Backend, error) {
				c.mu.Lock()
				defer c.mu.Unlock()
				k := id + "/" + filepath.Base(path)
				b := c.files[k]
				if b == nil {
					b = mem.New(uint64(size)/uint64(bs), bs)
					c.files[k] = b
				}
				if want := uint64(size) / uint64(bs); b.Blocks() < want { // a file grows on open
					if err := b.Resize(want); err != nil {
						return nil, err
					}
				}
				return keptMem{b}, nil
			},
			OpenLeg: func(ctx context.Context, lt LegTarget) (blockdev.Backend, error) {
				peer := c.nodes[lt.Node]
				c.mu.Lock()
				b := c.files[lt.Node+"/"+lt.Volume+".img"]
				c.mu.Unlock()
				l := &fakeLeg{tgt: peer.tgt, nqn: lt.SubNQN, host: lt.HostNQN, b: b, down: &peer.down,
					gen: peer.gen.Load(), nodeGen: &peer.gen}
				if b == nil {
					return nil, errors.New("no copy there")
				}
				if err := l.ok(); err != nil {
					return nil, err
				}
				return l, nil
			}})
		n.r.legWait = 300 * time.Millisecond
		c.nodes[id] = n
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.tgt.Close()
			n.r.Close()
		}
	})
	return c
}

// sync runs a pass on each node in order; failures are returned joined.
func (c *cluster) sync(ids ...string) error {
	var errs []error
	for _, id := range ids {
		errs = append(errs, c.nodes[id].r.Sync(context.Background()))
	}
	return errors.Join(errs...)
}

// createReplicated creates volume "rv" owned by owner with copies on
// others, exported in exportNQN.
func (c *cluster) createReplicated(t *testing.T, owner string, others ...string) {
	t.Helper()
	v, err := catalog.NewVolume(catalog.VolumeSpec{Name: "rv", Size: 4 << 20, Node: owner, Replicas: 1 + len(others), ReplicaNodes: others},
		hexID("urv"), hexID("grv"))
	if err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateVolume, Volume: &v})
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateSubsystem, Subsystem: &catalog.Subsystem{NQN: exportNQN, Node: owner, AllowAnyHost: true}})
	c.l.apply(t, catalog.Command{Op: catalog.OpAddNamespace, NQN: exportNQN, Name: "rv"})
}

// handle is the backend node id's export namespace serves for rv.
func (c *cluster) handle(t *testing.T, id string) blockdev.Backend {
	t.Helper()
	n := c.nodes[id]
	n.r.mu.Lock()
	defer n.r.mu.Unlock()
	ov := n.r.vols["rv"]
	if ov == nil {
		t.Fatalf("%s has no stack for rv", id)
	}
	return ov.vb
}

func (c *cluster) file(id string) *mem.Backend {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.files[id+"/rv.img"]
}

func (c *cluster) ana(t *testing.T, id string) uint8 {
	t.Helper()
	ts, ok := c.nodes[id].tgt.Subsystem(exportNQN)
	if !ok {
		t.Fatalf("%s does not serve %s", id, exportNQN)
	}
	return ts.ANAState(1, target.DefaultANAGroup)
}

// readBytes reads n bytes from block lba.
func readBytes(t *testing.T, b blockdev.Backend, lba uint64, n int) []byte {
	t.Helper()
	buf := make([]byte, n)
	if err := b.ReadAt([][]byte{buf}, lba); err != nil {
		t.Fatal(err)
	}
	return buf
}

func pattern(seed byte, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = seed + byte(i*7)
	}
	return p
}

// TestReplicatedVolumeServedAndMirrored (issue 16 items 2–3): the
// replica node serves its copy in ReplicaNQN admitting only the owner at
// epoch 1, and the export subsystem inaccessible; the owner serves it
// optimized through a mirror, so a write lands on both copies.
func TestReplicatedVolumeServedAndMirrored(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	rs, ok := c.nodes["n2"].tgt.Subsystem(catalog.ReplicaNQN("rv"))
	if !ok || !slices.Equal(rs.Hosts(), []string{catalog.OwnerHostNQN("n1", 1)}) || rs.AllowAnyHost() {
		t.Fatalf("replica subsystem on n2: %v", ok)
	}
	if _, ok := c.nodes["n1"].tgt.Subsystem(catalog.ReplicaNQN("rv")); ok {
		t.Fatal("the owner serves a replica subsystem for its own volume")
	}
	if got := c.ana(t, "n1"); got != nvme.ANAStateOptimized {
		t.Fatalf("owner ANA %d", got)
	}
	if got := c.ana(t, "n2"); got != nvme.ANAStateInaccessible {
		t.Fatalf("replica ANA %d", got)
	}
	h := c.handle(t, "n1")
	p := pattern(1, 8192)
	if err := h.WriteAt([][]byte{p}, 10, 0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"n1", "n2"} {
		if !bytes.Equal(readBytes(t, c.file(id), 10, len(p)), p) {
			t.Fatalf("%s's copy lacks the write", id)
		}
	}
	if v := c.l.volume("rv"); v.State != catalog.VolumeOnline || len(v.InSyncNodes()) != 2 {
		t.Fatalf("volume %+v", v)
	}
}

// TestPlannedFailoverMovesWriter: after a failover to n2 the old owner
// fences itself (inaccessible, serves its copy to n2 at epoch 2 only) and
// the new owner mirrors to it; data written before is readable through
// the new owner.
func TestPlannedFailoverMovesWriter(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	p := pattern(3, 4096)
	if err := c.handle(t, "n1").WriteAt([][]byte{p}, 0, 0); err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1})
	if err := c.sync("n1", "n2"); err != nil {
		t.Fatal(err)
	}
	if got := c.ana(t, "n1"); got != nvme.ANAStateInaccessible {
		t.Fatalf("old owner ANA %d", got)
	}
	if got := c.ana(t, "n2"); got != nvme.ANAStateOptimized {
		t.Fatalf("new owner ANA %d", got)
	}
	rs, ok := c.nodes["n1"].tgt.Subsystem(catalog.ReplicaNQN("rv"))
	if !ok || !slices.Equal(rs.Hosts(), []string{catalog.OwnerHostNQN("n2", 2)}) {
		t.Fatal("old owner does not serve its copy to the new owner at epoch 2")
	}
	if _, ok := c.nodes["n2"].tgt.Subsystem(catalog.ReplicaNQN("rv")); ok {
		t.Fatal("new owner still serves its copy as a replica")
	}
	h := c.handle(t, "n2")
	if !bytes.Equal(readBytes(t, h, 0, len(p)), p) {
		t.Fatal("new owner reads other data")
	}
	q := pattern(9, 4096)
	if err := h.WriteAt([][]byte{q}, 5, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBytes(t, c.file("n1"), 5, len(q)), q) {
		t.Fatal("the new owner's write is not on the old owner's copy")
	}
	if v := c.l.volume("rv"); len(v.InSyncNodes()) != 2 || v.State != catalog.VolumeOnline {
		t.Fatalf("volume %+v", v)
	}
}

// TestDeposedOwnerAcknowledgesNothing (issue 16 item 3, the fence): the
// volume fails over to n2 while n1 has not yet seen it. n2's pass drops
// n1's access to its copy first; n1's next write fails on that copy, its
// fault record carries epoch 1 and is refused (ErrStaleEpoch), so the
// write fails (ErrFenced) instead of being acknowledged without n2, and
// n1 turns its export inaccessible at once.
func TestDeposedOwnerAcknowledgesNothing(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	old := c.handle(t, "n1")
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1})
	c.sync("n2") // n1's copy is not served to n2 yet: n2 waits for it, then serves without it
	before := readBytes(t, c.file("n2"), 7, 4096)
	err := old.WriteAt([][]byte{pattern(5, 4096)}, 7, 0)
	if !errors.Is(err, mirror.ErrFenced) {
		t.Fatalf("deposed owner's write: %v, want ErrFenced", err)
	}
	if !bytes.Equal(readBytes(t, c.file("n2"), 7, 4096), before) {
		t.Fatal("the deposed owner's write reached the new owner's copy")
	}
	c.nodes["n1"].r.mu.Lock()
	var s catalog.Subsystem
	c.l.View(func(st *catalog.State) { s = st.Subsystems[exportNQN].Clone() })
	s.ANA = map[string]string{"n1": catalog.ANAOptimized} // as n1's stale catalogue says
	st, _ := c.nodes["n1"].r.anaFor(s)
	c.nodes["n1"].r.mu.Unlock()
	if st != nvme.ANAStateInaccessible {
		t.Fatalf("fenced owner would serve with ANA state %d", st)
	}
}

// TestFaultedReplicaRebuilds (issue 16 item 4 wiring): a copy that fails
// is recorded faulted through raft before the write completes; when it
// is back, the owner moves it to syncing, rebuilds it and records it in
// sync, and it holds every write.
func TestFaultedReplicaRebuilds(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	h := c.handle(t, "n1")
	c.nodes["n2"].down.Store(true)
	p := pattern(7, 16384)
	if err := h.WriteAt([][]byte{p}, 100, 0); err != nil {
		t.Fatalf("write with a copy down: %v", err)
	}
	r, _ := c.l.volume("rv").Replica("n2")
	if r.State != catalog.ReplicaFaulted {
		t.Fatalf("n2's copy is %s after it failed a write", r.State)
	}
	c.nodes["n2"].down.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.sync("n2", "n1")
		r, _ = c.l.volume("rv").Replica("n2")
		if r.State == catalog.ReplicaInSync {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("copy still %s", r.State)
		}
		time.Sleep(20 * time.Millisecond) // polling the catalogue, not synchronising
	}
	if !bytes.Equal(readBytes(t, c.file("n2"), 100, len(p)), p) {
		t.Fatal("rebuilt copy lacks the write it missed")
	}
	c.sync("n1")
	for _, ls := range c.nodes["n1"].r.vols["rv"].own.m.Legs() {
		if ls.State != mirror.InSync {
			t.Fatalf("leg %s is %v", ls.Name, ls.State)
		}
	}
	var sawSyncing bool
	c.l.mu.Lock()
	for _, cmd := range c.l.proposed {
		if cmd.Op == catalog.OpSetReplicaState && cmd.State == catalog.ReplicaSyncing && cmd.Epoch == 1 {
			sawSyncing = true
		}
	}
	c.l.mu.Unlock()
	if !sawSyncing {
		t.Fatal("no syncing record proposed")
	}
}

// TestSingleCopyVolumeHasNoMirror: a volume with one copy keeps today's
// path (the file backend unwrapped to the target, no mirror).
func TestSingleCopyVolumeHasNoMirror(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	v, _ := catalog.NewVolume(catalog.VolumeSpec{Name: "rv", Size: 1 << 20, Node: "n1"}, hexID("urv"), hexID("grv"))
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateVolume, Volume: &v})
	if err := c.sync("n1", "n2"); err != nil {
		t.Fatal(err)
	}
	ov := c.nodes["n1"].r.vols["rv"]
	if ov == nil || ov.own != nil || ov.role != roleSingle {
		t.Fatalf("single-copy volume stack %+v", ov)
	}
	if c.nodes["n2"].r.vols["rv"] != nil {
		t.Fatal("a node without a copy opened the volume")
	}
}

// TestReplicatedVolumeDeletedEverywhere: a deleted replicated volume's
// tombstone is purged copy by copy (PurgeVolume with NodeID), the last
// copy's node (not the owner) forgetting the name.
func TestReplicatedVolumeDeletedEverywhere(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	v, err := catalog.NewVolume(catalog.VolumeSpec{Name: "rv", Size: 1 << 20, Node: "n1", Replicas: 2, ReplicaNodes: []string{"n2"}}, hexID("urv"), hexID("grv"))
	if err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpCreateVolume, Volume: &v})
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpDeleteVolume, Name: "rv"})
	if err := c.sync("n1", "n1"); err != nil {
		t.Fatal(err)
	}
	left, ok := c.l.st.Volumes["rv"]
	if !ok || left.HasReplicaOn("n1") || !left.HasReplicaOn("n2") {
		t.Fatalf("after the owner purged its copy: %+v %v", left, ok)
	}
	if err := c.sync("n2"); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.l.st.Volumes["rv"]; ok {
		t.Fatal("the last copy's node did not purge the volume")
	}
}

// TestReplicatedVolumeGrows: a resize grows every copy (the replica in
// place under its namespace, the owner by rebuilding its stack at the new
// size) and the owner mirrors writes beyond the old end to the replica.
func TestReplicatedVolumeGrows(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpResizeVolume, Name: "rv", Size: 8 << 20})
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	h := c.handle(t, "n1")
	if got := int64(h.Blocks()) * int64(h.BlockSize()); got != 8<<20 {
		t.Fatalf("owner serves %d bytes", got)
	}
	if got := c.ana(t, "n1"); got != nvme.ANAStateOptimized {
		t.Fatalf("owner ANA %d after the resize", got)
	}
	lba := uint64(6<<20) / uint64(h.BlockSize())
	p := pattern(11, 4096)
	if err := h.WriteAt([][]byte{p}, lba, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBytes(t, c.file("n2"), lba, len(p)), p) {
		t.Fatal("write beyond the old end missing on the replica")
	}
	if r, _ := c.l.volume("rv").Replica("n2"); r.State != catalog.ReplicaInSync {
		t.Fatalf("replica %s after the resize", r.State)
	}
}

// TestReplicaFencesDeposedOwner: a replica node that stays a replica
// through a failover (n3) drops the old owner's access in its first pass
// (before it does anything else), so a write of the deposed owner that
// needs n3's copy is refused (ErrFenced), even while n2, the new owner,
// has not yet acted.
func TestReplicaFencesDeposedOwner(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	old := c.handle(t, "n1")
	if err := old.WriteAt([][]byte{pattern(1, 4096)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1})
	if err := c.sync("n3"); err != nil {
		t.Fatal(err)
	}
	rs, ok := c.nodes["n3"].tgt.Subsystem(catalog.ReplicaNQN("rv"))
	if !ok || !slices.Equal(rs.Hosts(), []string{catalog.OwnerHostNQN("n2", 2)}) {
		t.Fatal("n3 does not admit exactly the new owner at epoch 2")
	}
	before := readBytes(t, c.file("n3"), 9, 4096)
	if err := old.WriteAt([][]byte{pattern(2, 4096)}, 9, 0); !errors.Is(err, mirror.ErrFenced) {
		t.Fatalf("deposed owner's write: %v, want ErrFenced", err)
	}
	if !bytes.Equal(readBytes(t, c.file("n3"), 9, 4096), before) {
		t.Fatal("the deposed owner's write reached n3's copy")
	}
	if r, _ := c.l.volume("rv").Replica("n3"); r.State != catalog.ReplicaInSync {
		t.Fatalf("n3's copy is %s: the deposed owner faulted it", r.State)
	}
}

// TestRestartedReplicaReconnected: a replica node restarts, so the
// owner's connection to it is dead for good. The copy is faulted on the
// next write; the first rebuild over the old connection fails, and the
// owner then connects afresh and rebuilds the whole copy, which ends in
// sync with every write.
func TestRestartedReplicaReconnected(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	h := c.handle(t, "n1")
	c.nodes["n2"].gen.Add(1)
	p := pattern(13, 8192)
	if err := h.WriteAt([][]byte{p}, 40, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c.sync("n2", "n1")
		if r, _ := c.l.volume("rv").Replica("n2"); r.State == catalog.ReplicaInSync {
			break
		}
		if time.Now().After(deadline) {
			r, _ := c.l.volume("rv").Replica("n2")
			t.Fatalf("copy on the restarted node still %s", r.State)
		}
		time.Sleep(50 * time.Millisecond) // polling the catalogue, not synchronising
	}
	if !bytes.Equal(readBytes(t, c.file("n2"), 40, len(p)), p) {
		t.Fatal("the reconnected copy lacks the write")
	}
}
