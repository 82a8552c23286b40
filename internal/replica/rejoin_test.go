package replica

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestLegRejoinsAfterReconnect: the replica's listener goes away (its
// data stays), a write faults the leg, the listener returns at the same
// address and the leg's session reconnects by itself; the same Leg is
// then rebuilt by the mirror (Syncing, Rebuild, InSync) and ends holding
// exactly what the local leg holds, including the write it missed.
func TestLegRejoinsAfterReconnect(t *testing.T) {
	remote := mem.New(mBlocks, mBS)
	r := newMirrorRig(t, mem.New(mBlocks, mBS), remote, nil)
	if err := r.b.WriteAt([][]byte{fill(128<<10, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	addr := r.node.addr
	if err := r.node.l.Close(); err != nil {
		t.Fatal(err)
	}
	missed := fill(64<<10, 2)
	if err := r.b.WriteAt([][]byte{missed}, 512, 0); err != nil {
		t.Fatalf("write with the replica away: %v", err)
	}
	if st := r.legState(t); st.State != mirror.Faulted {
		t.Fatalf("leg %v with the replica away", st.State)
	}
	l2, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: r.fabric}), Target: r.node.tgt,
		Addr: addr, PortID: 1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l2.Close() })
	deadline := time.NewTimer(hangDeadline)
	defer deadline.Stop()
	for {
		ch := r.leg.Changed()
		if p := r.leg.Paths(); p[0].State == initiator.PathLive && p[0].Connects >= 2 {
			break
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatal("the leg's session did not reconnect")
		}
	}
	if err := r.m.SetState(legName, mirror.Syncing); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangDeadline)
	defer cancel()
	if err := r.m.Rebuild(ctx, legName, mirror.RebuildOptions{}); err != nil {
		t.Fatalf("Rebuild over the reconnected leg: %v", err)
	}
	if err := r.m.SetState(legName, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, remote, 0, mBlocks*mBS); !bytes.Equal(got, readBack(t, r.local, 0, mBlocks*mBS)) {
		t.Fatal("replica differs from the local leg after the rebuild")
	}
	if got := readBack(t, remote, 512, len(missed)); !bytes.Equal(got, missed) {
		t.Fatal("the missed write is not on the replica after the rebuild")
	}
}
