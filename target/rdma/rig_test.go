package rdma

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// testTimeout is a safety net only: every wait in these tests ends on an
// event long before it.
const testTimeout = 20 * time.Second

// rig is a Listener over a soft device on an in-process fabric, with a
// second soft provider on the same fabric for the hosts.
type rig struct {
	t      testing.TB
	ctx    context.Context
	fabric *soft.Fabric
	tprov  *soft.Provider
	hprov  *soft.Provider
	core   *fakeCore
	l      *Listener
}

type rigOpts struct {
	profile  soft.Profile
	tune     func(*verbs.DeviceAttr) // target device
	hostTune func(*verbs.DeviceAttr) // host device
	cfg      Config
	hooks    *testHooks
	realCore bool // cfg.Target is set by the caller
}

// forProfiles runs f as a subtest on each soft device profile (default
// and PVRDMA): the target must behave alike on both.
func forProfiles(t *testing.T, f func(t *testing.T, prof soft.Profile)) {
	for _, prof := range []soft.Profile{soft.ProfileDefault, soft.ProfilePVRDMA} {
		t.Run(prof.Name, func(t *testing.T) { f(t, prof) })
	}
}

func newRig(t testing.TB, o rigOpts) *rig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	f := soft.NewFabric()
	g := &rig{t: t, ctx: ctx, fabric: f}
	g.tprov = soft.New(soft.Options{Profile: o.profile, Fabric: f, Tune: o.tune})
	g.hprov = soft.New(soft.Options{Profile: o.profile, Fabric: f, Tune: o.hostTune, DeviceName: "host0"})
	cfg := o.cfg
	cfg.Provider = g.tprov
	if cfg.Addr == "" {
		cfg.Addr = "10.0.0.1:0"
	}
	if !o.realCore {
		g.core = newFakeCore(4 << 20)
		cfg.core = g.core
	}
	cfg.hooks = o.hooks
	l, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.l = l
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		_ = g.hprov.Close()
		_ = g.tprov.Close()
		if g.core != nil {
			if v := g.core.violations(); len(v) > 0 {
				t.Errorf("core contract violations: %v", v)
			}
		}
	})
	return g
}

func (g *rig) dial(o rawOpts) (*rawHost, error) {
	return dialRaw(g.ctx, g.t, g.hprov, g.l.Addr(), o)
}

func (g *rig) mustDial(o rawOpts) *rawHost {
	g.t.Helper()
	h, err := g.dial(o)
	if err != nil {
		g.t.Fatalf("dial qid %d: %v", o.qid, err)
	}
	g.t.Cleanup(h.close)
	return h
}

// connectQueue dials and sends the fabrics Connect: keyed connect data on
// the admin queue and in-capsule data on I/O queues, as the Linux host.
// enabledIOQueue connects the admin queue, enables the controller
// (CC.EN, IOSQES 6, IOCQES 4) and connects I/O queue o (its qid) to it.
func (g *rig) enabledIOQueue(o rawOpts) *rawHost {
	g.t.Helper()
	admin := g.connectQueue(rawOpts{qid: 0, depth: 32, local: o.local}, testSubNQN, testHostNQN)
	var s nvme.SQE
	s.SetPropertySet(nvme.PropCC, false, 1|4<<20|6<<16)
	s.SetCID(2)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetNull()
	admin.mustOK(g.ctx, &s, nil)
	io := g.mustDial(o)
	d := nvme.ConnectData{CNTLID: admin.cntlid, SubNQN: testSubNQN, HostNQN: testHostNQN}
	cs, icd := io.connectSQE(5, o.qid, true, 0, d)
	io.mustOK(g.ctx, &cs, icd)
	return io
}

func (g *rig) connectQueue(o rawOpts, sub, host string) *rawHost {
	g.t.Helper()
	h := g.mustDial(o)
	d := nvme.ConnectData{CNTLID: nvme.DynamicCNTLID, SubNQN: sub, HostNQN: host}
	if o.qid != 0 {
		d.CNTLID = 1
	}
	sqe, icd := h.connectSQE(0xC0, o.qid, o.qid != 0, 0, d)
	c := h.mustOK(g.ctx, &sqe, icd)
	h.cntlid = uint16(c.DW0())
	return h
}

// rejectStatus expects err to be a consumer reject carrying NVMe-oF reject
// private data and returns its status.
func rejectStatus(t testing.TB, err error) uint16 {
	t.Helper()
	var rj *verbs.RejectError
	if !errors.As(err, &rj) {
		t.Fatalf("connect error %v, want a reject", err)
	}
	if !rj.Consumer {
		t.Fatalf("reject not from the consumer: %v", err)
	}
	r, perr := nvme.ParseCMReject(rj.PrivateData)
	if perr != nil || r.Recfmt != 0 {
		t.Fatalf("reject private data %x: %v", rj.PrivateData, perr)
	}
	return r.Status
}

// ioSQE builds a Read or Write of n bytes at byte offset off of the disk,
// with a keyed SGL naming host data offset hoff.
func (h *rawHost) ioSQE(op uint8, cid uint16, off uint64, n uint32, hoff int, subtype uint8) nvme.SQE {
	var s nvme.SQE
	s.SetRW(op, 1, off/512, n/512, 0)
	s.SetCID(cid)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetKeyed(h.dataAddr(hoff), n, h.rkey(), subtype)
	return s
}

func bytesEqual(a, b []byte) bool { return bytes.Equal(a, b) }
