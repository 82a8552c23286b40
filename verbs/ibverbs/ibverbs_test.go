//go:build ibverbs

package ibverbs_test

import (
	"errors"
	"os"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/ibverbs"
	"github.com/rdmablk/rdmablk/verbs/verbstest"
)

// addrEnv names the IP (with port 0) of a netdev with an RDMA device, for
// the contract suite: RDMABLK_IBV_ADDR=10.0.2.15:0 in the lab guest.
const addrEnv = "RDMABLK_IBV_ADDR"

// On a host without RDMA (no kernel support, or no device) New must say so
// with verbs.ErrNoDevice, not crash.
func TestNoDeviceIsErrNoDevice(t *testing.T) {
	p, err := ibverbs.New(ibverbs.Options{})
	if err == nil {
		p.Close()
		t.Skip("this host has an RDMA device")
	}
	if !errors.Is(err, verbs.ErrNoDevice) {
		t.Fatalf("New without RDMA: %v, want verbs.ErrNoDevice", err)
	}
	t.Logf("as expected: %v", err)
}

// suiteLimits caps rxe's 2^20 work requests per queue: the suite creates a
// QP at the device limits, which at rxe's size exhausts a lab guest.
var suiteLimits = ibverbs.Options{MaxQPWR: 4096, MaxCQE: 65536}

func newProvider(t testing.TB) *ibverbs.Provider {
	t.Helper()
	p, err := ibverbs.New(suiteLimits)
	if err != nil {
		t.Skipf("no RDMA here: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func suiteAddr(t testing.TB) string {
	addr := os.Getenv(addrEnv)
	if addr == "" {
		t.Skipf("set %s to an address served by an RDMA device (ip:0)", addrEnv)
	}
	return addr
}

func TestSuite(t *testing.T) {
	addr := suiteAddr(t)
	verbstest.Run(t, func(t *testing.T) verbstest.Env {
		return verbstest.Env{
			Server: newProvider(t), Client: newProvider(t), Addr: addr,
			InjectQPError: ibverbs.InjectQPError,
		}
	})
}

// One provider (one event channel) serving both ends.
func TestSuiteSingleProvider(t *testing.T) {
	addr := suiteAddr(t)
	verbstest.Run(t, func(t *testing.T) verbstest.Env {
		p := newProvider(t)
		return verbstest.Env{Server: p, Client: p, Addr: addr, InjectQPError: ibverbs.InjectQPError}
	})
}

func TestDevices(t *testing.T) {
	p := newProvider(t)
	devs, err := p.Devices()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range devs {
		t.Logf("%s: %+v", d.Name(), d.Attr())
	}
}
