package reconcile

import (
	"bytes"
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestFailoverDoesNotWaitForLostOwner (issue 16 item 3, time without
// I/O): the owner n1 of a 3-copy volume is lost and the volume fails over
// to n2 with n1's copy faulted in the same command, as the leader's
// failover watch proposes it. n1's listener refuses until the opener's
// deadline (as internal/replica's Open does with a dead node). n2's first
// pass serves the export optimized without trying n1's copy (before, it
// spent openLeg's 2 s on it, and the hosts' I/O waited), and mirrors to
// n3. Once n1 answers again its copy is reconnected, rebuilt and recorded
// in sync, and holds what it missed.
func TestFailoverDoesNotWaitForLostOwner(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	p := pattern(21, 8192)
	if err := c.handle(t, "n1").WriteAt([][]byte{p}, 10, 0); err != nil {
		t.Fatal(err)
	}

	n2 := c.nodes["n2"]
	var triedLost atomic.Int32
	open := n2.r.o.OpenLeg
	n2.r.o.OpenLeg = func(ctx context.Context, lt LegTarget) (blockdev.Backend, error) {
		if lt.Node == "n1" && c.nodes["n1"].down.Load() {
			triedLost.Add(1)
			<-ctx.Done() // refused until the deadline
			return nil, ctx.Err()
		}
		return open(ctx, lt)
	}
	c.nodes["n1"].down.Store(true)
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1,
		State: catalog.ReplicaFaulted, Message: "owner unreachable"})
	if err := c.sync("n3", "n2"); err != nil {
		t.Fatal(err)
	}
	if got := c.ana(t, "n2"); got != nvme.ANAStateOptimized {
		t.Fatalf("new owner's ANA state %d after its first pass", got)
	}
	if n := triedLost.Load(); n != 0 {
		t.Fatalf("the new owner's first pass tried the lost owner's faulted copy %d times", n)
	}
	h := c.handle(t, "n2")
	if !bytes.Equal(readBytes(t, h, 10, len(p)), p) {
		t.Fatal("new owner reads other data")
	}
	q := pattern(33, 8192)
	if err := h.WriteAt([][]byte{q}, 30, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readBytes(t, c.file("n3"), 30, len(q)), q) {
		t.Fatal("the new owner's write is not on n3's copy")
	}

	// n1 returns: its copy is reconnected and rebuilt.
	c.nodes["n1"].down.Store(false)
	c.nodes["n1"].gen.Add(1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c.sync("n1", "n3", "n2")
		if r, _ := c.l.volume("rv").Replica("n1"); r.State == catalog.ReplicaInSync {
			break
		}
		if time.Now().After(deadline) {
			r, _ := c.l.volume("rv").Replica("n1")
			t.Fatalf("the lost owner's copy still %s", r.State)
		}
		time.Sleep(20 * time.Millisecond) // polling the catalogue, not synchronising
	}
	if !bytes.Equal(readBytes(t, c.file("n1"), 30, len(q)), q) {
		t.Fatal("the rebuilt copy lacks the write it missed")
	}
}

// lagView is a node's catalogue that raft has not yet brought up to date:
// the state frozen at some index until caughtUp, then the leader's.
type lagView struct {
	stale    *catalog.State
	live     *leader
	caughtUp atomic.Bool
}

func (l *lagView) View(fn func(*catalog.State)) {
	if l.caughtUp.Load() {
		l.live.View(fn)
		return
	}
	fn(l.stale)
}
func (l *lagView) Watch() (<-chan struct{}, func()) { return l.live.Watch() }

// TestRestartedOldOwnerStopsWaitingWhenDeposed (issue 16 item 4): the
// lost owner n1 restarts, and its first pass runs on the catalogue it had
// before the failover (raft has not caught it up yet): it builds the
// owner's stack at epoch 1, whose copies no longer admit it. When the
// catalogue catches up (n2 owns the volume at epoch 2), that pass stops
// waiting for the copies at once rather than after legOpenWait, and the
// next pass serves n1's copy to n2, so that n2 can rebuild it.
func TestRestartedOldOwnerStopsWaitingWhenDeposed(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3"); err != nil {
		t.Fatal(err)
	}
	n1 := c.nodes["n1"]
	lv := &lagView{live: c.l}
	c.l.View(func(st *catalog.State) { lv.stale = st.Clone() })
	n1.r.o.Catalog = lv
	const wait = 30 * time.Second
	n1.r.legWait = wait
	tried := make(chan struct{}, 16)
	open := n1.r.o.OpenLeg
	n1.r.o.OpenLeg = func(ctx context.Context, lt LegTarget) (blockdev.Backend, error) {
		b, err := open(ctx, lt)
		if err != nil {
			select {
			case tried <- struct{}{}:
			default:
			}
		}
		return b, err
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1,
		State: catalog.ReplicaFaulted, Message: "owner unreachable"})
	if err := c.sync("n3", "n2"); err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() { done <- n1.r.Sync(context.Background()) }()
	for range 2 { // the stale pass tries the copies, which refuse epoch 1
		<-tried
	}
	lv.caughtUp.Store(true)
	timer := time.NewTimer(wait / 2)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		t.Fatalf("the restarted node's stale pass still waits for its copies %v after the catalogue caught up", wait/2)
	}
	if err := c.sync("n1"); err != nil {
		t.Fatal(err)
	}
	rs, ok := n1.tgt.Subsystem(catalog.ReplicaNQN("rv"))
	if !ok || !slices.Equal(rs.Hosts(), []string{catalog.OwnerHostNQN("n2", 2)}) {
		t.Fatal("the restarted node does not serve its copy to the new owner at epoch 2")
	}
	if got := c.ana(t, "n1"); got != nvme.ANAStateInaccessible {
		t.Fatalf("restarted old owner's export ANA state %d", got)
	}
}

// TestRestartedOldOwnerServesNoStaleCopy (issue 16: no read of stale
// data): as above, but the restarted old owner's catalogue stays behind
// for its whole first pass. Its copies refuse it, so it would serve its
// own copy, which lacks the new owner's writes, ANA optimized: a host
// reading through it would get stale data. The pass confirms the
// ownership with the leader first, which refuses epoch 1, so the export
// is inaccessible.
func TestRestartedOldOwnerServesNoStaleCopy(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3"); err != nil {
		t.Fatal(err)
	}
	n1 := c.nodes["n1"]
	lv := &lagView{live: c.l}
	c.l.View(func(st *catalog.State) { lv.stale = st.Clone() })
	n1.r.o.Catalog = lv
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1,
		State: catalog.ReplicaFaulted, Message: "owner unreachable"})
	if err := c.sync("n3", "n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.handle(t, "n2").WriteAt([][]byte{pattern(41, 4096)}, 3, 0); err != nil {
		t.Fatal(err)
	}
	n1.r.Sync(context.Background()) // on the stale catalogue: n1 owns rv at epoch 1
	if got := c.ana(t, "n1"); got != nvme.ANAStateInaccessible {
		t.Fatalf("restarted old owner on a stale catalogue serves its outdated copy with ANA state %d", got)
	}
}
