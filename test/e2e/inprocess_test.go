package e2e

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const testNQN = "nqn.2026-11.io.rdmablk:e2e"

// inProcessTarget starts a target with one file volume of size bytes and an
// RDMA listener on the soft provider (over fabric, or TCP when fabric is
// nil), and returns the listen address.
func inProcessTarget(t *testing.T, profile soft.Profile, fabric *soft.Fabric, size int64, hosts []string) string {
	t.Helper()
	be, err := file.Open(filepath.Join(t.TempDir(), "vol.img"), file.Options{Size: size})
	if err != nil {
		t.Fatal(err)
	}
	tgt := target.New(target.Options{Logger: quietLogger()})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "e2e0001", AllowAnyHost: len(hosts) == 0, Hosts: hosts,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:0"
	if fabric != nil {
		addr = "e2e-target:4420"
	}
	l, err := rdma.Listen(rdma.Config{
		Provider: soft.New(soft.Options{Profile: profile, Fabric: fabric}),
		Target:   tgt, Addr: addr, PortID: 1, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Error(err)
		}
		if err := tgt.Close(); err != nil {
			t.Error(err)
		}
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return l.Addr()
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func connect(t *testing.T, addr string, opts initiator.Options) *initiator.Controller {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := initiator.Connect(ctx, addr, testNQN, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestPatternInProcess writes a pseudo-random pattern over a whole file
// volume on 4 queues at depth 32 and reads it back byte-exact, on both
// soft profiles, in-process and over TCP.
func TestPatternInProcess(t *testing.T) {
	for _, tc := range []struct {
		name    string
		profile soft.Profile
		tcp     bool
	}{
		{"default-fabric", soft.ProfileDefault, false},
		{"pvrdma-fabric", soft.ProfilePVRDMA, false},
		{"default-tcp", soft.ProfileDefault, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fabric *soft.Fabric
			if !tc.tcp {
				fabric = soft.NewFabric()
			}
			addr := inProcessTarget(t, tc.profile, fabric, 32<<20, nil)
			c := connect(t, addr, initiator.Options{
				Provider: soft.New(soft.Options{Profile: tc.profile, Fabric: fabric}),
				IOQueues: 4, QueueDepth: 32, Logger: quietLogger(),
			})
			if c.NumQueues() != 4 {
				t.Fatalf("NumQueues = %d, want 4", c.NumQueues())
			}
			ns := c.Namespaces()[0]
			writeReadVerify(t, c, ns, 32, 0x1234)
		})
	}
}

// TestHostNotAllowed: a host missing from the subsystem's allow list gets
// the Connect "invalid host" status; an allowed one connects.
func TestHostNotAllowed(t *testing.T) {
	fabric := soft.NewFabric()
	allowed := "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
	addr := inProcessTarget(t, soft.ProfileDefault, fabric, 8<<20, []string{allowed})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := initiator.Connect(ctx, addr, testNQN, initiator.Options{
		Provider: soft.New(soft.Options{Fabric: fabric}),
		HostNQN:  "nqn.2014-08.org.nvmexpress:uuid:99999999-2222-3333-4444-555555555555",
	})
	if !errors.Is(err, nvme.StatusConnectInvalidHost) {
		t.Fatalf("connect from a host not on the allow list: err = %v, want connect invalid host", err)
	}
	c := connect(t, addr, initiator.Options{Provider: soft.New(soft.Options{Fabric: fabric}), HostNQN: allowed})
	if len(c.Namespaces()) != 1 {
		t.Fatalf("allowed host sees %d namespaces", len(c.Namespaces()))
	}
}

// TestOutOfRangeKeepsServing: a read past the end of the namespace gets
// LBA Out of Range, and the same controller keeps serving byte-exact.
func TestOutOfRangeKeepsServing(t *testing.T) {
	fabric := soft.NewFabric()
	addr := inProcessTarget(t, soft.ProfileDefault, fabric, 8<<20, nil)
	c := connect(t, addr, initiator.Options{Provider: soft.New(soft.Options{Fabric: fabric}), IOQueues: 1, QueueDepth: 8})
	ns := c.Namespaces()[0]
	q := c.Queue(0)
	b, _ := q.AllocBuffer()
	done := make([]*initiator.IO, 1)
	for _, tc := range []struct {
		name string
		op   initiator.IOOp
		lba  uint64
	}{
		{"read straddling the end", initiator.IORead, ns.Blocks() - 1},
		{"write straddling the end", initiator.IOWrite, ns.Blocks() - 1},
		{"read with slba+nlb wrapping 2^64", initiator.IORead, ^uint64(0)},
	} {
		// The initiator's ReadAt/WriteAt refuse such ranges locally, so the
		// target is reached through the raw asynchronous API.
		io := initiator.IO{Op: tc.op, NSID: 1, LBA: tc.lba, Blocks: 2, Buf: b}
		if err := q.Submit(&io); err != nil {
			t.Fatal(err)
		}
		for q.Poll(done) == 0 {
			if err := q.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if !errors.Is(done[0].Result(), nvme.StatusLBAOutOfRange) {
			t.Fatalf("%s: %v, want LBA out of range", tc.name, done[0].Result())
		}
	}
	q.FreeBuffer(b)
	writeReadVerify(t, c, ns, 8, 42)
}
