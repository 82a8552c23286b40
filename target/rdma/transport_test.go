package rdma

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	nullbd "github.com/rdmablk/rdmablk/blockdev/null"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const (
	testSubNQN  = "nqn.2024-01.io.rdmablk:test"
	testHostNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
)

func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
}

func TestPortRegistered(t *testing.T) {
	g := newRig(t, rigOpts{cfg: Config{PortID: 7, Addr: "10.0.0.1:0", MaxQueueDepth: 64}})
	g.core.mu.Lock()
	p, ok := g.core.ports[7]
	g.core.mu.Unlock()
	if !ok {
		t.Fatal("port not registered")
	}
	want := nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0)
	if p.TrType != nvme.TrTypeRDMA || p.AdrFam != nvme.AdrFamIPv4 || p.TrAddr != "10.0.0.1" ||
		p.TrSvcID == "" || p.TrSvcID == "0" || p.TSAS != want {
		t.Fatalf("port %+v", p)
	}
	if c := p.Caps; !c.KeyedSGL || c.InCapsuleDataSize != 4096 || c.MaxDataTransfer != 1<<20 ||
		c.MaxQueueDepth != 64 || c.MaxSGLDescriptors != 1 || c.TrType != nvme.TrTypeRDMA {
		t.Fatalf("caps %+v", c)
	}
	if err := g.l.Close(); err != nil {
		t.Fatal(err)
	}
	g.core.mu.Lock()
	_, still := g.core.ports[7]
	g.core.mu.Unlock()
	if still {
		t.Fatal("port not removed by Close")
	}
}

func TestRoundTrip(t *testing.T) {
	g := newRig(t, rigOpts{})
	admin := g.connectQueue(rawOpts{qid: 0, depth: 32}, testSubNQN, testHostNQN)
	if admin.acc.CRQSize != 32 {
		t.Fatalf("admin CRQSIZE %d", admin.acc.CRQSize)
	}
	if admin.param.InitiatorDepth != 0 || admin.param.RNRRetryCount != 7 || !admin.param.FlowControl {
		// The host's view: the target's responder resources = host ORD 0.
		t.Logf("accept param %+v", admin.param)
	}
	io := g.connectQueue(rawOpts{qid: 1, depth: 64, dataSize: 2 << 20}, testSubNQN, testHostNQN)
	if io.acc.CRQSize != 64 {
		t.Fatalf("io CRQSIZE %d", io.acc.CRQSize)
	}
	qs := g.core.queueList()
	if len(qs) != 2 || qs[0].lastConnect.HostNQN != testHostNQN || qs[0].lastConnect.SubNQN != testSubNQN ||
		qs[1].qid != 1 || qs[1].depth != 64 {
		t.Fatalf("core queues: %+v", qs)
	}
	cid := uint16(1)
	for _, n := range []uint32{512, 4096, 128 << 10} {
		want := make([]byte, n)
		fill(want, uint64(n))
		copy(io.data(), want)
		w := io.ioSQE(nvme.IOWrite, cid, 1<<20, n, 0, 0)
		io.mustOK(g.ctx, &w, nil)
		clear(io.data()[1<<20 : 1<<20+int(n)])
		r := io.ioSQE(nvme.IORead, cid+1, 1<<20, n, 1<<20, 0)
		io.mustOK(g.ctx, &r, nil)
		if !bytes.Equal(io.data()[1<<20:1<<20+int(n)], want) {
			t.Fatalf("%d bytes: read data differs from written data", n)
		}
		cid += 2
	}
	// In-capsule write, read back by keyed SGL.
	want := make([]byte, 4096)
	fill(want, 99)
	var s nvme.SQE
	s.SetRW(nvme.IOWrite, 1, 64, 8, 0)
	s.SetCID(cid)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	io.mustOK(g.ctx, &s, want)
	r := io.ioSQE(nvme.IORead, cid+1, 64*512, 4096, 8192, 0)
	io.mustOK(g.ctx, &r, nil)
	if !bytes.Equal(io.data()[8192:8192+4096], want) {
		t.Fatal("in-capsule write: data differs")
	}
	st := g.l.Stats()
	if st.Accepted != 2 || st.Queues != 2 || st.RDMAReads != 3+1 || st.RDMAWrites != 4 ||
		st.InCapsuleBytes != 4096+1024 || st.BytesToHost != 512+4096+128<<10+4096 {
		t.Fatalf("stats %+v", st)
	}
}

func TestSendWithInvalidate(t *testing.T) {
	for _, tc := range []struct {
		profile soft.Profile
		inv     bool
	}{{soft.ProfileDefault, true}, {soft.ProfilePVRDMA, false}} {
		t.Run(tc.profile.Name, func(t *testing.T) {
			g := newRig(t, rigOpts{profile: tc.profile})
			io := g.connectQueue(rawOpts{qid: 1, depth: 16}, testSubNQN, testHostNQN)
			// A separate MR the target may invalidate.
			buf := make([]byte, 8192)
			mr, err := io.pd.RegisterMemory(buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
			if err != nil {
				t.Fatal(err)
			}
			defer mr.Close()
			copy(g.core.disk[4096:], bytes.Repeat([]byte{0x3C}, 4096))
			var s nvme.SQE
			s.SetRW(nvme.IORead, 1, 8, 8, 0)
			s.SetCID(11)
			s.SetPSDT(nvme.PSDTSGL)
			s.SGL1().SetKeyed(mr.Addr(), 4096, mr.RKey(), nvme.SGLSubtypeInvalidate)
			rsp, err := io.do(g.ctx, &s, nil)
			if err != nil || !rsp.cqe.Status().OK() {
				t.Fatalf("read: %v %v", err, rsp.cqe.Status())
			}
			if !bytes.Equal(buf[:4096], bytes.Repeat([]byte{0x3C}, 4096)) {
				t.Fatal("data not written")
			}
			gotInv := rsp.wc.Flags&verbs.WCWithInv != 0
			if gotInv != tc.inv || (tc.inv && rsp.wc.InvalidatedRKey != mr.RKey()) {
				t.Fatalf("WC flags %#x invalidated %#x (rkey %#x), want invalidate %v",
					rsp.wc.Flags, rsp.wc.InvalidatedRKey, mr.RKey(), tc.inv)
			}
			// The queue keeps working with the main MR.
			r := io.ioSQE(nvme.IORead, 12, 4096, 4096, 0, nvme.SGLSubtypeAddress)
			io.mustOK(g.ctx, &r, nil)
		})
	}
}

// TestRealCoreConnectSequence runs the admin and I/O connect sequence of a
// host against the real target core with a RAM backend.
func TestRealCoreConnectSequence(t *testing.T) {
	tgt := newRealTarget(t, false)
	g := newRig(t, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1}})
	admin := g.connectQueue(rawOpts{qid: 0, depth: 32}, testSubNQN, testHostNQN)
	var s nvme.SQE
	s.SetPropertyGet(nvme.PropCAP, true)
	s.SetCID(2)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetNull()
	c := admin.mustOK(g.ctx, &s, nil)
	if mqes := c.Result64() & 0xFFFF; mqes+1 != DefaultMaxQueueDepth {
		t.Fatalf("CAP.MQES+1 = %d", mqes+1)
	}
	s = nvme.SQE{}
	s.SetPropertySet(nvme.PropCC, false, 1|4<<20|6<<16) // EN, IOCQES 4, IOSQES 6
	s.SetCID(3)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetNull()
	admin.mustOK(g.ctx, &s, nil)
	s = nvme.SQE{}
	s.SetIdentify(nvme.CNSController, 0)
	s.SetCID(4)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetKeyed(admin.dataAddr(0), nvme.IdentifySize, admin.rkey(), 0)
	admin.mustOK(g.ctx, &s, nil)
	id, err := nvme.ParseIdentifyController(admin.data()[:nvme.IdentifySize])
	if err != nil {
		t.Fatal(err)
	}
	if id.IOCCSZ != (64+4096)/16 || id.IORCSZ != 1 || id.SGLS&nvme.SGLSKeyed == 0 || id.MSDBD != 1 ||
		id.MDTS != 8 || id.SubNQN != testSubNQN {
		t.Fatalf("identify: IOCCSZ %d IORCSZ %d SGLS %#x MSDBD %d MDTS %d SubNQN %q",
			id.IOCCSZ, id.IORCSZ, id.SGLS, id.MSDBD, id.MDTS, id.SubNQN)
	}
	io := g.mustDial(rawOpts{qid: 1, depth: 32})
	d := nvme.ConnectData{CNTLID: admin.cntlid, SubNQN: testSubNQN, HostNQN: testHostNQN}
	cs, icd := io.connectSQE(5, 1, true, 0, d)
	io.mustOK(g.ctx, &cs, icd)
	want := make([]byte, 64<<10)
	fill(want, 5)
	copy(io.data(), want)
	w := io.ioSQE(nvme.IOWrite, 6, 0, 64<<10, 0, 0)
	io.mustOK(g.ctx, &w, nil)
	r := io.ioSQE(nvme.IORead, 7, 0, 64<<10, 64<<10, nvme.SGLSubtypeInvalidate)
	io.mustOK(g.ctx, &r, nil)
	if !bytes.Equal(io.data()[64<<10:128<<10], want) {
		t.Fatal("real core: read data differs")
	}
}

// newRealTarget builds a target core with one subsystem (any host) and one
// namespace of 16 MiB: a RAM disk, or a null device.
func newRealTarget(t testing.TB, null bool) *target.Target {
	t.Helper()
	tgt := target.New(target.Options{Logger: slog.New(slog.DiscardHandler)})
	var be blockdev.Backend = mem.New(32768, 512)
	if null {
		be = nullbd.New(32768, 512)
	}
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testSubNQN, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tgt.Close(); err != nil {
			t.Errorf("target Close: %v", err)
		}
		_ = be.Close()
	})
	return tgt
}
