package target

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// tcpLikePort is a port whose transport takes no keyed SGLs (as NVMe/TCP):
// the core must not claim them.
func tcpLikePort(id uint16) Port {
	return Port{
		ID: id, TrType: nvme.TrTypeTCP, AdrFam: nvme.AdrFamIPv4, TrAddr: "192.0.2.7", TrSvcID: "4420",
		TSAS: [256]byte{0: 0}, // TCP: SECTYPE none
		Caps: TransportCaps{
			TrType: nvme.TrTypeTCP, InCapsuleDataSize: 8192, MaxDataTransfer: 256 << 10,
			MaxQueueDepth: 64, MaxSGLDescriptors: 1, InCapsuleDataOffset: 0, ResponseCapsuleSize: 16,
		},
	}
}

// TestIdentifyFromTransportCaps: SGLS, ICDOFF, IOCCSZ, IORCSZ, MDTS, MAXCMD
// and MSDBD come from the capabilities of the port the controller was
// created on, not from RDMA assumptions.
func TestIdentifyFromTransportCaps(t *testing.T) {
	odd := tcpLikePort(3)
	odd.TrType, odd.Caps.TrType = 0xFD, 0xFD // a made-up transport
	odd.Caps = TransportCaps{TrType: 0xFD, KeyedSGL: true, InCapsuleDataSize: 0, MaxDataTransfer: 64 << 10,
		MaxQueueDepth: 32, MaxSGLDescriptors: 4, InCapsuleDataOffset: 2, ResponseCapsuleSize: 32}
	cases := []struct {
		name string
		port Port
		want nvme.IdentifyController
	}{
		{"rdma", testPort(testPortID, "192.0.2.1"), nvme.IdentifyController{
			SGLS: nvme.SGLSSupported | nvme.SGLSKeyed | nvme.SGLSOffset, IOCCSZ: (64 + testICD) / 16, IORCSZ: 1,
			ICDOFF: 0, MDTS: 8, MAXCMD: testDepth, MSDBD: 1}},
		{"tcp-like", tcpLikePort(2), nvme.IdentifyController{
			SGLS: nvme.SGLSSupported | nvme.SGLSOffset, IOCCSZ: (64 + 8192) / 16, IORCSZ: 1,
			ICDOFF: 0, MDTS: 6, MAXCMD: 64, MSDBD: 1}},
		{"odd", odd, nvme.IdentifyController{
			SGLS: nvme.SGLSSupported | nvme.SGLSKeyed, IOCCSZ: 4, IORCSZ: 2,
			ICDOFF: 2, MDTS: 4, MAXCMD: 32, MSDBD: 4}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := New(Options{Logger: quietLogger(), Workers: 1})
			t.Cleanup(func() { tg.Close() })
			if err := tg.AddPort(c.port); err != nil {
				t.Fatal(err)
			}
			if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, AllowAnyHost: true}); err != nil {
				t.Fatal(err)
			}
			conn := newFakeConn()
			q, err := tg.NewQueue(c.port.ID, conn, 32)
			if err != nil {
				t.Fatal(err)
			}
			h := &host{t: t, tg: tg, q: q, conn: conn}
			h.connectAdmin(testSubNQN, testHostNQN, 0)
			h.enable()
			id, err := nvme.ParseIdentifyController(h.identify(nvme.CNSController, 0, nvme.StatusSuccess))
			if err != nil {
				t.Fatal(err)
			}
			got := nvme.IdentifyController{SGLS: id.SGLS, IOCCSZ: id.IOCCSZ, IORCSZ: id.IORCSZ, ICDOFF: id.ICDOFF,
				MDTS: id.MDTS, MAXCMD: id.MAXCMD, MSDBD: id.MSDBD}
			if got != c.want {
				t.Fatalf("Identify fields\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// TestAddPortChecksCaps: capability values the Identify fields cannot
// carry, or a transport type that disagrees with the port's, are refused.
func TestAddPortChecksCaps(t *testing.T) {
	tg := New(Options{Logger: quietLogger(), Workers: 1})
	defer tg.Close()
	bad := []func(p *Port){
		func(p *Port) { p.Caps.InCapsuleDataOffset = -1 },
		func(p *Port) { p.Caps.InCapsuleDataOffset = 1 << 16 },
		func(p *Port) { p.Caps.ResponseCapsuleSize = 8 },
		func(p *Port) { p.Caps.ResponseCapsuleSize = 24 },
		func(p *Port) { p.Caps.TrType = nvme.TrTypeRDMA },
	}
	for i, f := range bad {
		p := tcpLikePort(uint16(10 + i))
		f(&p)
		if err := tg.AddPort(p); !errors.Is(err, ErrBadPort) {
			t.Errorf("case %d: AddPort %v, want ErrBadPort", i, err)
		}
	}
	if err := tg.AddPort(tcpLikePort(20)); err != nil {
		t.Fatal(err)
	}
}

// TestDiscoveryEntryFormatter pins the entry the core builds for a port:
// every transport fact from the port, the core's own admin queue size.
func TestDiscoveryEntryFormatter(t *testing.T) {
	p := tcpLikePort(7)
	p.TSAS[0] = 0 // SECTYPE: none
	got := p.DiscoveryEntry("nqn.2026-11.io.rdmablk:x")
	want := nvme.DiscoveryLogEntry{
		TrType: nvme.TrTypeTCP, AdrFam: nvme.AdrFamIPv4, SubType: nvme.SubTypeNVM, TReq: nvme.TReqSecureNotSpecified,
		PortID: 7, CNTLID: nvme.DynamicCNTLID, ASQSZ: maxAdminSQSize + 1, TrSvcID: "4420",
		SubNQN: "nqn.2026-11.io.rdmablk:x", TrAddr: "192.0.2.7", TSAS: p.TSAS,
	}
	if got != want {
		t.Fatalf("entry\n got %+v\nwant %+v", got, want)
	}
	r := testPort(1, "192.0.2.1")
	if e := r.DiscoveryEntry("nqn.2026-11.io.rdmablk:x"); e.TSAS != r.TSAS || e.TrType != nvme.TrTypeRDMA {
		t.Fatalf("RDMA entry %+v", e)
	}
}
