package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

func cmReq(recfmt, qid, hrq, hsq uint16) []byte {
	b := make([]byte, nvme.CMRequestSize)
	r := nvme.CMRequest{QID: qid, HRQSize: hrq, HSQSize: hsq}
	r.Marshal(b)
	b[0], b[1] = byte(recfmt), byte(recfmt>>8)
	return b
}

func TestNegotiate(t *testing.T) {
	attr := defaultFakeAttr() // MaxQPWR 1024, init rd atom 16
	cfg := Config{Provider: fakeProvider{}, core: newFakeCore(0)}
	if err := cfg.normalize(attr.MaxQPWR); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		pd   []byte
		rr   uint8
		attr func(*verbs.DeviceAttr)
		want uint16
	}{
		{"short private data", cmReq(0, 1, 32, 31)[:31], 16, nil, nvme.CMRejectInvalidPrivateDataLen},
		{"no private data", nil, 16, nil, nvme.CMRejectInvalidPrivateDataLen},
		{"recfmt 1", cmReq(1, 1, 32, 31), 16, nil, nvme.CMRejectInvalidRecfmt},
		{"qid 0xffff", cmReq(0, 0xFFFF, 32, 31), 16, nil, nvme.CMRejectInvalidQID},
		{"admin 33 entries", cmReq(0, 0, 33, 32), 16, nil, nvme.CMRejectInvalidHSQSize},
		{"admin 1 entry", cmReq(0, 0, 1, 0), 16, nil, nvme.CMRejectInvalidHSQSize},
		{"io 1 entry", cmReq(0, 1, 1, 0), 16, nil, nvme.CMRejectInvalidHSQSize},
		{"io above MaxQueueDepth", cmReq(0, 1, 129, 128), 16, nil, nvme.CMRejectInvalidHSQSize},
		{"io hsqsize 0xffff", cmReq(0, 1, 0xFFFF, 0xFFFF), 16, nil, nvme.CMRejectInvalidHSQSize},
		{"hrqsize below hsqsize+1", cmReq(0, 1, 31, 31), 16, nil, nvme.CMRejectInvalidHRQSize},
		{"hrqsize above device limit", cmReq(0, 1, 1025, 31), 16, nil, nvme.CMRejectInvalidHRQSize},
		{"host IRD 0", cmReq(0, 1, 32, 31), 0, nil, nvme.CMRejectInvalidIRD},
		{"device ORD 0", cmReq(0, 1, 32, 31), 16, func(a *verbs.DeviceAttr) { a.MaxQPInitRdAtom = 0 }, nvme.CMRejectNoResources},
		{"send CQ too small", cmReq(0, 1, 32, 31), 16, func(a *verbs.DeviceAttr) { a.MaxCQE = 63 }, nvme.CMRejectNoResources},
		{"device queue below hsqsize", cmReq(0, 1, 32, 31), 16, func(a *verbs.DeviceAttr) { a.MaxQPWR = 16 }, nvme.CMRejectInvalidHSQSize},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := attr
			if tc.attr != nil {
				tc.attr(&a)
			}
			_, st := negotiate(&cfg, a, verbs.ConnParam{PrivateData: tc.pd, InitiatorDepth: tc.rr})
			if st != tc.want {
				t.Fatalf("reject status %d, want %d", st, tc.want)
			}
		})
	}
}

func TestNegotiateAccepts(t *testing.T) {
	attr := defaultFakeAttr()
	attr.MaxQPInitRdAtom = 8
	cfg := Config{Provider: fakeProvider{}, core: newFakeCore(0), InCapsuleDataSize: 8192}
	if err := cfg.normalize(attr.MaxQPWR); err != nil {
		t.Fatal(err)
	}
	p, st := negotiate(&cfg, attr, verbs.ConnParam{PrivateData: cmReq(0, 0, 32, 31), InitiatorDepth: 16})
	if st != 0 || p.depth != 32 || p.ord != 8 || p.icd != 0 || p.sendQ != 64 || p.rcqe != 32 || p.scqe != 64 {
		t.Fatalf("admin: st %d %+v", st, p)
	}
	// Old SPDK hosts send hrqsize = hsqsize + 1 with a 1-based hsqsize.
	p, st = negotiate(&cfg, attr, verbs.ConnParam{PrivateData: cmReq(0, 3, 129, 127), InitiatorDepth: 2})
	if st != 0 || p.depth != 128 || p.ord != 2 || p.icd != 8192 || p.qid != 3 {
		t.Fatalf("io: st %d %+v", st, p)
	}
	// The send queue is clamped to the device.
	attr.MaxQPWR = 200
	p, st = negotiate(&cfg, attr, verbs.ConnParam{PrivateData: cmReq(0, 1, 128, 127), InitiatorDepth: 2})
	if st != 0 || p.sendQ != 200 || p.scqe != 200 {
		t.Fatalf("clamped: st %d %+v", st, p)
	}
	ap := acceptParam(p)
	a, err := nvme.ParseCMAccept(ap.PrivateData)
	if err != nil || a.CRQSize != 128 || ap.InitiatorDepth != 2 || ap.ResponderResources != 0 ||
		ap.RNRRetryCount != 7 || !ap.FlowControl || len(ap.PrivateData) != nvme.CMAcceptSize {
		t.Fatalf("accept %+v %+v %v", ap, a, err)
	}
	rj, err := nvme.ParseCMReject(rejectData(nvme.CMRejectInvalidHRQSize))
	if err != nil || rj.Status != nvme.CMRejectInvalidHRQSize || rj.Recfmt != 0 {
		t.Fatalf("reject %+v %v", rj, err)
	}
}

func TestConfigNormalize(t *testing.T) {
	bad := []Config{
		{Provider: fakeProvider{}, core: newFakeCore(0), InCapsuleDataSize: 17},
		{Provider: fakeProvider{}, core: newFakeCore(0), InCapsuleDataSize: MaxInCapsuleDataSize + 16},
		{Provider: fakeProvider{}, core: newFakeCore(0), MaxDataTransfer: 1000},
		{Provider: fakeProvider{}, core: newFakeCore(0), MaxDataTransfer: 32 << 20},
		{Provider: fakeProvider{}, core: newFakeCore(0), MaxQueueDepth: 1},
		{Provider: fakeProvider{}, core: newFakeCore(0), MaxQueueDepth: 70000},
		{Provider: fakeProvider{}},
		{core: newFakeCore(0)},
	}
	for i, c := range bad {
		if err := c.normalize(1024); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	c := Config{Provider: fakeProvider{}, core: newFakeCore(0), Addr: "10.0.0.1", MaxQueueDepth: 4096}
	if err := c.normalize(1024); err != nil {
		t.Fatal(err)
	}
	if c.Addr != "10.0.0.1:4420" || c.MaxQueueDepth != 1024 || c.InCapsuleDataSize != 4096 ||
		c.MaxDataTransfer != 1<<20 || c.Logger == nil || c.ConnectTimeout != DefaultConnectTimeout ||
		c.MaxUnconnectedQueues != DefaultMaxUnconnectedQueues || c.MaxUnconnectedPerHost != DefaultMaxUnconnectedPerHost ||
		c.MaxDataBufferBytes != DefaultMaxDataBufferBytes {
		t.Fatalf("%+v", c)
	}
	c = Config{Provider: fakeProvider{}, core: newFakeCore(0), Addr: "[fe80::1]", InCapsuleDataSize: -1}
	if err := c.normalize(0); err != nil || c.Addr != "[fe80::1]:4420" || c.InCapsuleDataSize != 0 {
		t.Fatalf("%+v %v", c, err)
	}
}
