package replica

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestStaleEpochRefused: the replica admits only the owner and epoch it
// knows (OwnerHostNQN); a leg opened with an older epoch's identity fails
// at Open with an error naming the replica subsystem, at once (the
// refusal is final) rather than after the connect timeout.
func TestStaleEpochRefused(t *testing.T) {
	fabric := soft.NewFabric()
	n := newReplica(t, fabric, mem.New(64, 4096))
	cfg := legConfig(fabric, n)
	cfg.HostNQN = catalog.OwnerHostNQN("node1", 2)
	cfg.Options.ConnectTimeout = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, cfg)
	if err == nil {
		l.Close()
		t.Fatal("a stale owner identity was admitted")
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), testSubNQN) {
		t.Fatalf("Open: %v (context: %v); want a prompt refusal naming %s", err, ctx.Err(), testSubNQN)
	}
}

// TestMirrorOverTCP: a Leg whose path is NVMe/TCP ("tcp://") carries the
// mirror's writes and they land on the replica. Nothing is registered over
// TCP, yet a write is sent from the mirror's buffer itself (no copy into
// the session's pool); a read through the leg is copied from a pool
// buffer.
func TestMirrorOverTCP(t *testing.T) {
	fabric := soft.NewFabric()
	remote := mem.New(mBlocks, mBS)
	n := newReplica(t, fabric, remote)
	cfg := legConfig(fabric, n)
	cfg.Paths = []string{n.listenTCP(t)}
	leg := openLeg(t, cfg)
	local := &fixedMem{Backend: mem.New(mBlocks, mBS)}
	m, err := mirror.New(mirror.Config{LocalName: "node1", Local: local, Membership: newMembership()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if err := m.AddLeg(legName, leg, mirror.InSync); err != nil {
		t.Fatal(err)
	}
	fb := m.Backend().(blockdev.FixedBuffers)
	region := make([]byte, 256<<10)
	reg, err := fb.RegisterFixed(region)
	if err != nil {
		t.Fatal(err)
	}
	copy(region, fill(len(region), 3))
	done := make(chanDone, 1)
	if !fb.SubmitWriteFixed(region, 7, blockdev.WriteFUA, reg, done) {
		t.Fatal("mirror refused the write")
	}
	if err := within(t, done, 30*time.Second, "write over TCP"); err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, remote, 7, len(region)); !bytes.Equal(got, region) {
		t.Fatal("write over TCP missing on the replica")
	}
	if st := leg.Stats(); st.ZeroCopyBytes != uint64(len(region)) || st.CopiedBytes != 0 {
		t.Fatalf("write over TCP: zero-copy %d, copied %d bytes; want %d sent from the caller's buffer", st.ZeroCopyBytes, st.CopiedBytes, len(region))
	}
	got := make([]byte, 4096)
	if err := leg.ReadAt([][]byte{got}, 7); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, region[:4096]) {
		t.Fatal("read over TCP returned other bytes")
	}
	if st := leg.Stats(); st.CopiedBytes != 4096 {
		t.Fatalf("read over TCP: copied %d bytes, want 4096 (through a pool buffer)", st.CopiedBytes)
	}
}
