package cluster

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestResizeLiveController: a host stays connected to the owner (B) while
// the volume is resized through another node's API (C). B raises the
// Namespace Attribute Changed event; the host's controller re-identifies
// the namespace and reports the new size on the same connection (no
// reconnect, same controller ID on both ends); the old data is intact and
// the new blocks are usable.
func TestResizeLiveController(t *testing.T) {
	ms := startCluster(t, 3)
	a, b, c := ms[0], ms[1], ms[2]
	const nqn = "nqn.2026-11.io.rdmablk:cluster-resize"
	const oldSize, newSize = 4 << 20, 12 << 20
	if _, err := a.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "grow", Size: oldSize, Node: b.id}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.CreateSubsystem(ctx(t), api.CreateSubsystemRequest{NQN: nqn, Node: b.id, AllowAnyHost: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.AddNamespace(ctx(t), nqn, 1, "grow"); err != nil {
		t.Fatal(err)
	}
	opts := initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), IOQueues: 2, QueueDepth: 16}
	var ctrl *initiator.Controller
	var ns *initiator.Namespace
	eventually(t, 20*time.Second, "connect to B and see namespace 1", func() bool {
		var err error
		if ctrl, err = initiator.Connect(ctx(t), b.dataAddr(), nqn, opts); err != nil {
			return false
		}
		if ns, err = ctrl.Namespace(1); err != nil {
			ctrl.Close()
			return false
		}
		return true
	})
	t.Cleanup(func() { ctrl.Close() })
	if ns.Size() != oldSize {
		t.Fatalf("namespace size %d, want %d", ns.Size(), oldSize)
	}
	ts, ok := b.tgt.Subsystem(nqn)
	if !ok || len(ts.Controllers()) != 1 || ts.Controllers()[0].ID() != ctrl.CNTLID() {
		t.Fatalf("B's target does not hold exactly the host's controller %d", ctrl.CNTLID())
	}
	pattern := bytes.Repeat([]byte("live resize ok! "), 64<<10/16)
	head, tail := int64(0), int64(oldSize-len(pattern)) // both ends of the old size
	for _, off := range []int64{head, tail} {
		if _, err := ns.WriteAt(pattern, off); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ns.WriteAt(pattern, oldSize); err == nil {
		t.Fatal("write past the old end succeeded")
	}

	// Resize through C, which neither owns the volume nor (necessarily)
	// leads. The initiator exposes no event hook, so wait on the
	// controller's view with a deadline, failing at once if it is lost.
	if _, err := c.c.ResizeVolume(ctx(t), "grow", newSize); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ns.Size() != newSize {
		select {
		case <-ctrl.Done():
			t.Fatalf("controller lost while waiting for the resize: %v", ctrl.Err())
		case <-wctx.Done():
			t.Fatalf("the live controller still reports %d bytes (want %d)", ns.Size(), newSize)
		case <-tick.C:
		}
	}

	// Same connection: the controller is alive, its namespace object is
	// the one it had, and B still holds exactly this controller.
	select {
	case <-ctrl.Done():
		t.Fatalf("controller lost: %v", ctrl.Err())
	default:
	}
	if cur, err := ctrl.Namespace(1); err != nil || cur != ns {
		t.Fatalf("namespace 1 after the rescan: %v (same object: %v)", err, cur == ns)
	}
	if cs := ts.Controllers(); len(cs) != 1 || cs[0].ID() != ctrl.CNTLID() {
		t.Fatalf("B's controllers changed: %d, host controller %d", len(cs), ctrl.CNTLID())
	}
	if ns.Blocks()*uint64(ns.BlockSize()) != newSize {
		t.Fatalf("blocks %d of %d bytes", ns.Blocks(), ns.BlockSize())
	}

	// Old data intact, the grown range usable, on the live connection.
	got := make([]byte, len(pattern))
	for _, off := range []int64{head, tail} {
		clear(got)
		if _, err := ns.ReadAt(got, off); err != nil || !bytes.Equal(got, pattern) {
			t.Fatalf("old data at %d after the resize: %v (intact: %v)", off, err, bytes.Equal(got, pattern))
		}
	}
	zeros := make([]byte, len(pattern))
	if _, err := ns.ReadAt(got, oldSize); err != nil || !bytes.Equal(got, zeros) {
		t.Fatalf("grown range not zero: %v", err)
	}
	end := int64(newSize - len(pattern))
	if _, err := ns.WriteAt(pattern, end); err != nil {
		t.Fatalf("write at the new end: %v", err)
	}
	clear(got)
	if _, err := ns.ReadAt(got, end); err != nil || !bytes.Equal(got, pattern) {
		t.Fatalf("read back at the new end: %v", err)
	}
}
