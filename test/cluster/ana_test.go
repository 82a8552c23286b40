package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestANAStateReachesTarget: an ANA state set through node A's API for
// the owner B reaches B's target on each of its ports (two listeners):
// the target reports it, a host connected to B reads it from the ANA log
// page, and its I/O fails with ANA Inaccessible (a path error, which a
// multipath session fails over on). Setting it back to optimized restores
// I/O on the same connection; a state for another node leaves B alone.
func TestANAStateReachesTarget(t *testing.T) {
	ms := startCluster(t, 2)
	a, b := ms[0], ms[1]
	const nqn = "nqn.2026-11.io.rdmablk:cluster-ana"
	const portB2 = 2
	l2, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{}), Target: b.tgt, Addr: "127.0.0.1:0",
		PortID: portB2, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })

	if _, err := a.c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: "ana", Size: 1 << 20, Node: b.id}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.CreateSubsystem(ctx(t), api.CreateSubsystemRequest{NQN: nqn, Node: b.id, AllowAnyHost: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.AddNamespace(ctx(t), nqn, 1, "ana"); err != nil {
		t.Fatal(err)
	}
	opts := initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), IOQueues: 1, QueueDepth: 8}
	var ctrl *initiator.Controller
	var ns *initiator.Namespace
	eventually(t, 20*time.Second, "connect to B's second port and see namespace 1", func() bool {
		var err error
		if ctrl, err = initiator.Connect(ctx(t), l2.Addr(), nqn, opts); err != nil {
			return false
		}
		if ns, err = ctrl.Namespace(1); err != nil {
			ctrl.Close()
			return false
		}
		return true
	})
	t.Cleanup(func() { ctrl.Close() })
	ts, ok := b.tgt.Subsystem(nqn)
	if !ok {
		t.Fatal("subsystem not in B's target")
	}
	if st, err := ctrl.ANAState(ctx(t), 1); err != nil || st != nvme.ANAStateOptimized {
		t.Fatalf("initial ANA state %v, %v", st, err)
	}
	buf := make([]byte, 4096)
	if _, err := ns.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}

	stateOnBothPorts := func(want uint8) func() bool {
		return func() bool {
			return ts.ANAState(1, target.DefaultANAGroup) == want && ts.ANAState(portB2, target.DefaultANAGroup) == want
		}
	}

	// Inaccessible on B, set through A.
	if err := a.c.SetANAState(ctx(t), nqn, b.id, catalog.ANAInaccessible); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "B's target has the subsystem inaccessible on both ports",
		stateOnBothPorts(nvme.ANAStateInaccessible))
	if st, err := ctrl.ANAState(ctx(t), 1); err != nil || st != nvme.ANAStateInaccessible {
		t.Fatalf("ANA log through B's second port: %v, %v", st, err)
	}
	if _, err := ns.ReadAt(buf, 0); !errors.Is(err, nvme.StatusANAInaccessible) {
		t.Fatalf("read while inaccessible: %v", err)
	}

	// A state recorded for another node does not touch B.
	chg := ts.ANAChangeCount()
	if err := a.c.SetANAState(ctx(t), nqn, a.id, catalog.ANANonOptimized); err != nil {
		t.Fatal(err)
	}

	// Optimized again: I/O on the same connection works.
	if err := b.c.SetANAState(ctx(t), nqn, b.id, catalog.ANAOptimized); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "B's target has the subsystem optimized again", stateOnBothPorts(nvme.ANAStateOptimized))
	if got := ts.ANAChangeCount(); got != chg+2 {
		t.Errorf("change count %d after one change on each of 2 ports, want %d (another node's state moved it?)", got, chg+2)
	}
	if st, err := ctrl.ANAState(ctx(t), 1); err != nil || st != nvme.ANAStateOptimized {
		t.Fatalf("ANA log after the return: %v, %v", st, err)
	}
	if _, err := ns.ReadAt(buf, 0); err != nil {
		t.Fatalf("read after the return: %v", err)
	}
}
