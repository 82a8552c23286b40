package initiator

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/verbs"
)

// fakeProvider is a verbs.Provider over the fake QPs whose controller is
// a fakeAuthTarget plus just enough of an admin command set (properties,
// Identify, Number of Queues) for Connect and OpenSession to run their
// whole bring-up, so a Session's reconnect can be watched.
type fakeProvider struct {
	t  testing.TB
	ft *fakeAuthTarget

	mu    sync.Mutex
	mem   *fakeMem
	disk  []byte
	cc    map[*fakeQP]uint32 // CC per admin queue
	ids   []*fakeConnID
	early int // admin commands before the admin queue was authenticated
}

const fakeBlocks, fakeBS = 64, 512

func newFakeProvider(t testing.TB, ft *fakeAuthTarget) *fakeProvider {
	return &fakeProvider{t: t, ft: ft, mem: &fakeMem{}, disk: make([]byte, fakeBlocks*fakeBS), cc: map[*fakeQP]uint32{}}
}

func (p *fakeProvider) Name() string                     { return "fake" }
func (p *fakeProvider) Devices() ([]verbs.Device, error) { return []verbs.Device{fakeDevice{p}}, nil }
func (p *fakeProvider) Listen(string, verbs.ListenOptions) (verbs.Listener, error) {
	return nil, errors.New("fake: no listener")
}

func (p *fakeProvider) Resolve(ctx context.Context, addr string, _ verbs.ResolveOptions) (verbs.ConnID, error) {
	id := &fakeConnID{p: p, done: make(chan struct{})}
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
	return id, nil
}

// adminIDs are the connections of admin queues, oldest first.
func (p *fakeProvider) adminIDs() []*fakeConnID {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*fakeConnID
	for _, id := range p.ids {
		if id.qp != nil && id.qp.qid == 0 {
			out = append(out, id)
		}
	}
	return out
}

type fakeDevice struct{ p *fakeProvider }

func (d fakeDevice) Name() string { return "fake0" }
func (d fakeDevice) Attr() verbs.DeviceAttr {
	return verbs.DeviceAttr{MaxMRSize: 1 << 30, MaxQP: 64, MaxQPWR: 1024, MaxSGE: 2, MaxCQ: 64, MaxCQE: 1 << 16,
		MaxMR: 1024, MaxPD: 16, MaxQPRdAtom: 16, NumCompVectors: 1}
}
func (d fakeDevice) AllocPD() (verbs.ProtectionDomain, error) { return d.p.mem, nil }
func (d fakeDevice) CreateCQ(int, int) (verbs.CompletionQueue, error) {
	return newFakeCQ(), nil
}

type fakeConnID struct {
	p    *fakeProvider
	qp   *fakeQP
	done chan struct{}
	once sync.Once
}

func (id *fakeConnID) Device() verbs.Device { return fakeDevice{id.p} }
func (id *fakeConnID) CreateQP(pd verbs.ProtectionDomain, attr verbs.QPInitAttr) (verbs.QueuePair, error) {
	id.qp = &fakeQP{t: id.p.t, mem: id.p.mem, cq: attr.SendCQ.(*fakeCQ), bs: fakeBS, disk: id.p.disk, auto: true, fabrics: id.p.handle}
	return id.qp, nil
}
func (id *fakeConnID) QP() verbs.QueuePair { return id.qp }
func (id *fakeConnID) Connect(ctx context.Context, cp verbs.ConnParam) (verbs.ConnParam, error) {
	req, err := nvme.ParseCMRequest(cp.PrivateData)
	if err != nil {
		return verbs.ConnParam{}, err
	}
	id.p.mu.Lock()
	id.qp.qid = req.QID
	id.p.mu.Unlock()
	return verbs.ConnParam{}, nil
}
func (id *fakeConnID) Accept(context.Context, verbs.ConnParam) error {
	return errors.New("fake: no accept")
}
func (id *fakeConnID) Reject([]byte) error { return errors.New("fake: no reject") }
func (id *fakeConnID) Disconnect() error {
	id.once.Do(func() { close(id.done) })
	return nil
}
func (id *fakeConnID) Done() <-chan struct{} { return id.done }
func (id *fakeConnID) Err() error            { return errors.New("fake: disconnected") }
func (id *fakeConnID) LocalAddr() string     { return "fake:1" }
func (id *fakeConnID) RemoteAddr() string    { return "fake:4420" }
func (id *fakeConnID) Close() error          { return id.Disconnect() }

// handle answers fabrics and admin commands.
func (p *fakeProvider) handle(q *fakeQP, cmd *fakeCmd) nvme.CQE {
	e := &cmd.sqe
	var cqe nvme.CQE
	if e.Opcode() == nvme.OpFabrics {
		switch e.FCType() {
		case nvme.FabricsConnect, nvme.FabricsAuthSend, nvme.FabricsAuthRecv:
			return p.ft.handle(q, cmd)
		}
	}
	p.ft.mu.Lock()
	authed := p.ft.done[p.ft.ctrls[q]]
	p.ft.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ft.require && !authed {
		p.early++
		cqe.SetStatus(nvme.StatusAuthRequired | nvme.StatusDNR)
		return cqe
	}
	if e.Opcode() == nvme.OpFabrics {
		pc := nvme.PropertyCmd{SQE: e}
		switch {
		case e.FCType() == nvme.FabricsPropertyGet && pc.Offset() == nvme.PropCAP:
			cqe.SetResult64(127 | 1<<nvme.CAPTOShift)
		case e.FCType() == nvme.FabricsPropertyGet && pc.Offset() == nvme.PropVS:
			cqe.SetDW0(0x10400)
		case e.FCType() == nvme.FabricsPropertyGet && pc.Offset() == nvme.PropCSTS:
			cc, csts := p.cc[q], uint32(0)
			if cc&nvme.CCEN != 0 {
				csts |= nvme.CSTSRDY
			}
			if cc&nvme.CCSHNMask != 0 {
				csts |= nvme.CSTSSHSTComplete
			}
			cqe.SetDW0(csts)
		case e.FCType() == nvme.FabricsPropertySet && pc.Offset() == nvme.PropCC:
			p.cc[q] = uint32(pc.Value())
		default:
			cqe.SetStatus(nvme.StatusInvalidField | nvme.StatusDNR)
		}
		return cqe
	}
	sgl := e.SGL1()
	out := func(b []byte) {
		d, ok := p.mem.lookup(sgl.Address(), int(sgl.Length()), sgl.Key(), true, verbs.AccessRemoteWrite)
		if !ok {
			p.t.Errorf("admin %#x: host buffer not registered", e.Opcode())
			return
		}
		clear(d)
		copy(d, b)
	}
	switch e.Opcode() {
	case nvme.AdminIdentify:
		b := make([]byte, nvme.IdentifySize)
		switch (nvme.IdentifyCmd{SQE: e}).CNS() {
		case nvme.CNSController:
			ic := nvme.IdentifyController{CNTRLTYPE: nvme.CntrlTypeIO, SGLS: nvme.SGLSKeyed | 1, SubNQN: p.ft.subNQN, MDTS: 5}
			if err := ic.Marshal(b); err != nil {
				p.t.Error(err)
			}
		case nvme.CNSActiveNSList:
			if e.NSID() < fakeNSID {
				nvme.MarshalNSList(b, []uint32{fakeNSID})
			}
		case nvme.CNSNamespace:
			ns := nvme.IdentifyNamespace{NSZE: fakeBlocks, NCAP: fakeBlocks, NUSE: fakeBlocks}
			ns.LBAF[0].LBADS = 9
			if err := ns.Marshal(b); err != nil {
				p.t.Error(err)
			}
		default:
			cqe.SetStatus(nvme.StatusInvalidField | nvme.StatusDNR)
			return cqe
		}
		out(b)
	case nvme.AdminSetFeatures:
		if (nvme.FeaturesCmd{SQE: e}).FID() != nvme.FeatNumQueues {
			cqe.SetStatus(nvme.StatusInvalidField | nvme.StatusDNR)
			return cqe
		}
		cqe.SetDW0(nvme.NumQueuesValue(2, 2))
	case nvme.AdminKeepAlive:
	default:
		cqe.SetStatus(nvme.StatusInvalidOpcode | nvme.StatusDNR)
	}
	return cqe
}

// TestAuthSessionReconnect: a Session to a controller that requires
// DH-HMAC-CHAP authenticates every queue before using it, and again on
// every queue of the association its reconnect makes after the path was
// lost; I/O works on both, and no admin command reached the controller
// before the admin queue was authenticated.
func TestAuthSessionReconnect(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	csec := testSecret(t, auth.HashSHA384, 2)
	ft := newFakeAuthTarget(t, true, *sec, csec)
	ft.subNQN = "nqn.2026-01.io.rdmablk:authsession"
	p := newFakeProvider(t, ft)
	s, err := OpenSession(context.Background(), SessionOptions{
		Options: Options{Provider: p, IOQueues: 2, QueueDepth: 8, KeepAlive: -1, ConnectTimeout: 10 * time.Second,
			DHCHAPSecret: sec, DHCHAPCtrlSecret: csec},
		SubNQN: ft.subNQN, Paths: []string{"fake:4420"}, ReconnectDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := bytes.Repeat([]byte{0x5a}, 4096)
	if _, err := s.WriteAt(want, 0); err != nil {
		t.Fatal(err)
	}
	authed := func() (int, int) {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		return len(ft.authed), ft.negotiate
	}
	if n, neg := authed(); n != 3 || neg != 3 {
		t.Fatalf("first association: %d queues authenticated, %d negotiations; want 3 and 3", n, neg)
	}
	// Lose the path: the admin connection drops.
	ids := p.adminIDs()
	if len(ids) != 1 {
		t.Fatalf("%d admin connections", len(ids))
	}
	ids[0].Disconnect()
	// Wait for the reconnected path (Changed fires on every path change).
	bound := time.NewTimer(20 * time.Second)
	defer bound.Stop()
	for {
		ch := s.Changed()
		if len(p.adminIDs()) == 2 && s.Paths()[0].State == PathLive {
			break
		}
		select {
		case <-ch:
		case <-bound.C:
			t.Fatalf("no reconnect: paths %+v", s.Paths())
		}
	}
	got := make([]byte, len(want))
	if _, err := s.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("read after reconnect returned other bytes")
	}
	if ids := p.adminIDs(); len(ids) != 2 {
		t.Fatalf("%d admin connections, want 2 (a reconnect)", len(ids))
	}
	if n, neg := authed(); n != 6 || neg != 6 {
		t.Fatalf("after reconnect: %d queues authenticated, %d negotiations; want 6 and 6", n, neg)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.early != 0 {
		t.Fatalf("%d admin commands before authentication", p.early)
	}
}
