package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const authHostNQN = "nqn.2014-08.org.nvmexpress:uuid:0e2e0000-0000-4000-8000-00000000a0f1"

// ioCounter counts the reads and writes that reach a backend.
type ioCounter struct {
	blockdev.Backend
	n atomic.Int64
}

func (c *ioCounter) ReadAt(v [][]byte, lba uint64) error {
	c.n.Add(1)
	return c.Backend.ReadAt(v, lba)
}

func (c *ioCounter) WriteAt(v [][]byte, lba uint64, f blockdev.WriteFlags) error {
	c.n.Add(1)
	return c.Backend.WriteAt(v, lba, f)
}

// authTarget serves a subsystem that requires DH-HMAC-CHAP over the
// soft provider (PVRDMA profile) and returns it, its listener address and
// the backend's I/O counter.
func authTarget(t *testing.T, fab *soft.Fabric, addr string) (*target.Subsystem, *ioCounter) {
	t.Helper()
	be := &ioCounter{Backend: mem.New(4096, 512)}
	tgt := target.New(target.Options{Logger: quietLogger()})
	sub, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testNQN, Serial: "e2eauth1", RequireAuth: true, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	})
	if err != nil {
		t.Fatal(err)
	}
	l, err := rdma.Listen(rdma.Config{
		Provider: soft.New(soft.Options{Fabric: fab, Profile: soft.ProfilePVRDMA}),
		Target:   tgt, Addr: addr, PortID: 1, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(); _ = tgt.Close() })
	return sub, be
}

func newSecret(t *testing.T, hh auth.HashID, n int) auth.Secret {
	t.Helper()
	s, err := auth.GenerateSecret(rand.Reader, hh, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDHCHAPAllCombinations: our initiator authenticates to our target
// with every hash × DH group the target may insist on, bidirectionally
// (the host also checks the controller secret), on the admin queue and
// the I/O queue, then writes and reads back 4 KiB.
func TestDHCHAPAllCombinations(t *testing.T) {
	fab := soft.NewFabric()
	sub, _ := authTarget(t, fab, "auth-all:4420")
	host, ctrl := newSecret(t, auth.HashSHA256, 32), newSecret(t, 0, 48)
	for _, h := range auth.AllHashes {
		for _, g := range auth.AllDHGroups {
			t.Run(fmt.Sprintf("%v/%v", h, g), func(t *testing.T) {
				if err := sub.SetHostAuth(authHostNQN, &target.HostAuth{Secret: host, CtrlSecret: &ctrl,
					Hashes: []auth.HashID{h}, DHGroups: []auth.DHGroupID{g}}); err != nil {
					t.Fatal(err)
				}
				c := authConnect(t, fab, "auth-all:4420", &host, &ctrl)
				if c == nil {
					t.Fatal("refused")
				}
				defer c.Close()
				want := bytes.Repeat([]byte{byte(h)<<4 | byte(g)}, 4096)
				ns, err := c.Namespace(1)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := ns.WriteAt(want, 8192); err != nil {
					t.Fatal(err)
				}
				got := make([]byte, 4096)
				if _, err := ns.ReadAt(got, 8192); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("read back: %v (equal %v)", err, bytes.Equal(got, want))
				}
			})
		}
	}
}

// authConnect connects with the given secrets; nil and the test's error
// when refused (the caller checks it through authErr).
func authConnect(t *testing.T, fab *soft.Fabric, addr string, host, ctrl *auth.Secret) *initiator.Controller {
	t.Helper()
	c, err := authTry(fab, addr, host, ctrl)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func authTry(fab *soft.Fabric, addr string, host, ctrl *auth.Secret) (*initiator.Controller, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return initiator.Connect(ctx, addr, testNQN, initiator.Options{
		Provider: soft.New(soft.Options{Fabric: fab, Profile: soft.ProfilePVRDMA}),
		HostNQN:  authHostNQN, IOQueues: 1, QueueDepth: 8, Logger: quietLogger(),
		DHCHAPSecret: host, DHCHAPCtrlSecret: ctrl,
	})
}

// TestDHCHAPRefusals: a host with the right NQN but a wrong or no secret,
// or a controller that cannot prove the controller secret, gets no
// controller — and not one read or write reaches the backend.
func TestDHCHAPRefusals(t *testing.T) {
	fab := soft.NewFabric()
	sub, be := authTarget(t, fab, "auth-no:4420")
	host, ctrl := newSecret(t, auth.HashSHA256, 32), newSecret(t, 0, 32)
	if err := sub.SetHostAuth(authHostNQN, &target.HostAuth{Secret: host, CtrlSecret: &ctrl}); err != nil {
		t.Fatal(err)
	}
	wrong, wrongCtrl := newSecret(t, auth.HashSHA256, 32), newSecret(t, 0, 32)
	for _, tc := range []struct {
		name       string
		host, ctrl *auth.Secret
		want       error
	}{
		{"wrong host secret", &wrong, nil, initiator.ErrAuthFailed},
		{"no host secret", nil, nil, initiator.ErrAuthRequired},
		{"wrong controller secret", &host, &wrongCtrl, initiator.ErrAuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := authTry(fab, "auth-no:4420", tc.host, tc.ctrl)
			if err == nil {
				c.Close()
				t.Fatal("connected")
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
	if n := be.n.Load(); n != 0 {
		t.Fatalf("%d reads/writes reached the backend", n)
	}
	// The right secrets still work after the refusals.
	c := authConnect(t, fab, "auth-no:4420", &host, &ctrl)
	c.Close()
}
