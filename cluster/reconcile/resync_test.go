package reconcile

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// TestUncleanFailoverResyncsCopies (issue 16: no divergent copies): the
// owner n1 dies with writes in flight that reached n2's copy only (block
// 50) and the new owner n3's only (block 900). After the automatic
// failover to n3 (old owner's copy faulted), n3 resyncs the other in-sync
// copy from its own: n2 and n3 end byte for byte identical, n2 in sync.
func TestUncleanFailoverResyncsCopies(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	if err := c.handle(t, "n1").WriteAt([][]byte{pattern(1, 8192)}, 10, 0); err != nil {
		t.Fatal(err)
	}
	bs := c.l.volume("rv").BlockSize
	// The writes n1 had in flight when it died, never acknowledged.
	if err := c.file("n2").WriteAt([][]byte{pattern(2, bs)}, 50, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.file("n3").WriteAt([][]byte{pattern(3, bs)}, 900, 0); err != nil {
		t.Fatal(err)
	}
	own := c.loseN1ToN3(t)
	select {
	case <-own.resyncDone:
	case <-time.After(60 * time.Second):
		t.Fatal("resync did not finish")
	}
	if p := own.m.ResyncProgress(); p.Err != nil || p.Done != p.Total || p.Total == 0 {
		t.Fatalf("resync progress %+v", p)
	}
	a, b := c.file("n2"), c.file("n3")
	if got, want := readBytes(t, a, 0, int(a.Blocks())*bs), readBytes(t, b, 0, int(b.Blocks())*bs); !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("n2's copy differs from the new owner's at block %d after the resync", i/bs)
			}
		}
	}
	for _, ls := range own.m.Legs() {
		if ls.Name == "n2" && ls.State != mirror.InSync {
			t.Fatalf("n2's leg is %v after the resync", ls.State)
		}
	}
}

// TestNoResyncWithoutUncleanHandOff: a volume's first owner (volume
// being created: nothing was ever in flight) does not resync, nor does a
// stack this process rebuilds at the same epoch after closing the last
// one cleanly (a resize).
func TestNoResyncWithoutUncleanHandOff(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	n1 := c.nodes["n1"].r
	own := func() *ownerVol {
		n1.mu.Lock()
		defer n1.mu.Unlock()
		return n1.vols["rv"].own
	}
	first := own()
	if first == nil || first.resyncDone != nil {
		t.Fatal("the first owner of a new volume started a resync")
	}
	if v := c.l.volume("rv"); v.State != catalog.VolumeOnline {
		t.Fatalf("volume %s, want online", v.State)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpResizeVolume, Name: "rv", Size: 8 << 20})
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	if o := own(); o == first || o.resyncDone != nil {
		t.Fatalf("after a resize: stack rebuilt %v, resync started %v; want rebuilt, no resync", o != first, o.resyncDone != nil)
	}
}

// TestDeposedOwnerClosesQuietly: after a planned failover the old owner
// tears its mirror down; its copies have fenced it, so their final
// flushes fail, and it proposes no fault for them (its epoch is stale:
// the proposals could only be refused).
func TestDeposedOwnerClosesQuietly(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 1})
	c.l.mu.Lock()
	before := len(c.l.proposed)
	c.l.mu.Unlock()
	if err := c.sync("n3", "n2", "n1"); err != nil {
		t.Fatal(err)
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	for _, cmd := range c.l.proposed[before:] {
		if cmd.Op == catalog.OpSetReplicaState && cmd.Epoch == 1 {
			t.Fatalf("deposed owner proposed %s %s %s at epoch 1", cmd.Op, cmd.NodeID, cmd.State)
		}
	}
}

// TestShutdownDoesNotWaitForRaft: at shutdown (raft already stopped) an
// in-sync copy whose final flush fails is reported by Close, not
// proposed faulted (the proposal could not commit and would hold the
// shutdown for its timeout).
func TestShutdownDoesNotWaitForRaft(t *testing.T) {
	c := newCluster(t, "n1", "n2")
	c.createReplicated(t, "n1", "n2")
	if err := c.sync("n2", "n1"); err != nil {
		t.Fatal(err)
	}
	c.nodes["n2"].down.Store(true)
	c.l.mu.Lock()
	before := len(c.l.proposed)
	c.l.mu.Unlock()
	err := c.nodes["n1"].r.Close()
	if !errors.Is(err, mirror.ErrFenced) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("Close: %v; want the unflushed copy reported", err)
	}
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	for _, cmd := range c.l.proposed[before:] {
		if cmd.Op == catalog.OpSetReplicaState {
			t.Fatalf("shutdown proposed %s %s %s", cmd.Op, cmd.NodeID, cmd.State)
		}
	}
}

// resyncWatch is a Proposer in front of the test leader that records,
// for every OpReportResync, the error the leader answered and the
// volume's resync record right after it.
type resyncWatch struct {
	l       *leader
	mu      sync.Mutex
	reports []resyncReport
	// failEnds is how many clearing reports to fail (no leader).
	failEnds int
}

type resyncReport struct {
	c     catalog.Command
	err   error
	after *catalog.Rebuild
}

func (w *resyncWatch) Propose(ctx context.Context, c catalog.Command) (catalog.Result, error) {
	w.mu.Lock()
	fail := c.Op == catalog.OpReportResync && c.Rebuild == nil && w.failEnds > 0
	if fail {
		w.failEnds--
		w.reports = append(w.reports, resyncReport{c, errNoLeader, nil})
	}
	w.mu.Unlock()
	if fail {
		return catalog.Result{}, errNoLeader
	}
	res, err := w.l.Propose(ctx, c)
	if c.Op == catalog.OpReportResync {
		after := w.l.volume(c.Name).Clone().Resync
		w.mu.Lock()
		w.reports = append(w.reports, resyncReport{c, err, after})
		w.mu.Unlock()
	}
	return res, err
}

func (w *resyncWatch) list() []resyncReport {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.reports)
}

var errNoLeader = errors.New("no leader")

// loseN1ToN3 is an unclean failover of volume rv: n1, its owner, is
// lost, the catalogue moves it to n3, and n2 and n3 reconcile. n3's new
// stack must have started a resync; it is returned.
func (c *cluster) loseN1ToN3(t *testing.T) *ownerVol {
	t.Helper()
	c.nodes["n1"].down.Store(true)
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n3", Epoch: 1,
		State: catalog.ReplicaFaulted, Message: "owner lost"})
	if err := c.sync("n2", "n3"); err != nil {
		t.Fatal(err)
	}
	own := c.ownerOf("n3")
	if own == nil || own.resyncDone == nil {
		t.Fatal("the new owner started no resync after an unclean failover")
	}
	return own
}

// ownerOf returns node id's owner stack of rv (nil when it has none).
func (c *cluster) ownerOf(id string) *ownerVol {
	r := c.nodes[id].r
	r.mu.Lock()
	defer r.mu.Unlock()
	if v := r.vols["rv"]; v != nil {
		return v.own
	}
	return nil
}

// TestResyncProgressInCatalogue (issue 16: resync where admins look):
// the new owner's resync after an unclean failover is recorded in the
// catalogue (volume status reads it) from its start, fenced by the new
// epoch, and cleared when it ends, also when the leader is missing at
// first (the clearing report is retried).
func TestResyncProgressInCatalogue(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	w := &resyncWatch{l: c.l, failEnds: 2} // the end is recorded on the third try
	c.nodes["n3"].r.o.Proposer = w
	own := c.loseN1ToN3(t)
	select {
	case <-own.resyncDone:
	case <-time.After(60 * time.Second):
		t.Fatal("resync did not finish")
	}
	reps := w.list()
	if len(reps) < 2 {
		t.Fatalf("%d resync reports, want a start and an end", len(reps))
	}
	first, last := reps[0], reps[len(reps)-1]
	size := c.l.volume("rv").Size // one other in-sync copy (n2): each byte once
	if first.err != nil || first.c.Epoch != 2 || first.after == nil || !first.after.Full || first.after.Total != size || first.after.Updated.IsZero() {
		t.Fatalf("first report %+v: err %v, catalogue then %+v", first.c, first.err, first.after)
	}
	if last.err != nil || last.c.Rebuild != nil || last.after != nil {
		t.Fatalf("last report %+v: err %v, catalogue then %+v; want the record cleared", last.c, last.err, last.after)
	}
	if ends := reps[len(reps)-3:]; ends[0].c.Rebuild != nil || ends[0].err == nil || ends[1].c.Rebuild != nil || ends[1].err == nil {
		t.Fatalf("the end was not retried after failed proposals: %+v", ends)
	}
	if v := c.l.volume("rv"); v.Resync != nil {
		t.Fatalf("catalogue keeps a finished resync: %+v", v.Resync)
	}
}

// TestResyncAbandonedOnRoleChange: a planned failover while the owner's
// resync runs (slowly) clears the record in the same command; the
// deposed owner's resync stops without proposing anything more, and the
// record that remains, if any, is the new owner's.
func TestResyncAbandonedOnRoleChange(t *testing.T) {
	c := newCluster(t, "n1", "n2", "n3")
	c.createReplicated(t, "n1", "n2", "n3")
	if err := c.sync("n2", "n3", "n1"); err != nil {
		t.Fatal(err)
	}
	w := &resyncWatch{l: c.l}
	for _, id := range []string{"n2", "n3"} {
		c.nodes[id].r.o.Proposer = w
		c.nodes[id].r.o.RebuildBytesPerSecond = 64 << 10 // 4 MiB to two copies: minutes
	}
	own := c.loseN1ToN3(t)
	c.l.apply(t, catalog.Command{Op: catalog.OpFailover, Name: "rv", NodeID: "n2", Epoch: 2})
	if v := c.l.volume("rv"); v.Resync != nil {
		t.Fatalf("failover kept the old owner's resync %+v", v.Resync)
	}
	if err := c.sync("n3", "n2"); err != nil { // n3 tears its stack down (waits for its resync), n2 builds one
		t.Fatal(err)
	}
	select {
	case <-own.resyncDone:
	default:
		t.Fatal("the deposed owner's resync still runs")
	}
	for _, r := range w.list() {
		if r.c.Epoch == 2 && r.c.Rebuild == nil {
			t.Fatalf("the deposed owner proposed the end of its resync: %+v", r.c)
		}
		if r.c.Epoch == 2 && r.err == nil && c.l.volume("rv").Epoch == 3 && r.after == nil {
			t.Fatalf("report %+v left no record", r.c)
		}
	}
	if v := c.l.volume("rv"); v.Resync != nil {
		reps := w.list()
		if last := reps[len(reps)-1]; last.c.Epoch != 3 || last.err != nil {
			t.Fatalf("record %+v after the failover, last report %+v (%v)", v.Resync, last.c, last.err)
		}
	}
}
