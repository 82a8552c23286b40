package rdma

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/target"
)

// authOver runs one DH-HMAC-CHAP transaction on h over the wire, as the
// Linux host does after a Connect whose response has ATR set: every
// message goes by keyed SGL (Authentication Send: the target RDMA READs
// it; Receive: it RDMA WRITEs up to AL = 4 KiB). It returns the host's
// verdict.
func authOver(g *rig, h *rawHost, cfg auth.HostConfig, tid uint16) error {
	g.t.Helper()
	ah, err := auth.NewHost(cfg, tid)
	if err != nil {
		g.t.Fatal(err)
	}
	cid := uint16(0x100)
	send := func(msg []byte) {
		g.t.Helper()
		cid++
		copy(h.data(), msg)
		var s nvme.SQE
		auth.SetAuthSend(&s, uint32(len(msg)))
		s.SetCID(cid)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetKeyed(h.dataAddr(0), uint32(len(msg)), h.rkey(), nvme.SGLSubtypeAddress)
		h.mustOK(g.ctx, &s, nil)
	}
	recv := func() []byte {
		g.t.Helper()
		cid++
		const al = 4096
		clear(h.data()[:al])
		var s nvme.SQE
		auth.SetAuthReceive(&s, al)
		s.SetCID(cid)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetKeyed(h.dataAddr(0), al, h.rkey(), nvme.SGLSubtypeAddress)
		h.mustOK(g.ctx, &s, nil)
		return bytes.Clone(h.data()[:al])
	}
	neg, err := ah.Negotiate()
	if err != nil {
		g.t.Fatal(err)
	}
	send(neg)
	reply, err := ah.Challenge(recv())
	if err != nil {
		return err
	}
	send(reply)
	s2, err := ah.Success1(recv())
	if s2 != nil && err == nil {
		send(s2)
	}
	return err
}

// TestDHCHAPOverRDMA: DH-HMAC-CHAP end to end through the RDMA transport
// and the real core (bidirectional, ffdhe2048): the admin and the I/O
// queue authenticate and data moves; a wrong secret gets AUTH_Failure1
// over the wire, and the target then disconnects the queue.
func TestDHCHAPOverRDMA(t *testing.T) {
	host, err := auth.ParseSecret("DHHC-1:01:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+KfiaR:")
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := auth.ParseSecret("DHHC-1:00:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj/jBqb2:")
	if err != nil {
		t.Fatal(err)
	}
	tgt := target.New(target.Options{Logger: slog.New(slog.DiscardHandler)})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testSubNQN, Hosts: []string{testHostNQN}, RequireAuth: true,
		HostAuth:   map[string]target.HostAuth{testHostNQN: {Secret: host, CtrlSecret: &ctrl}},
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: mem.New(1024, 512)}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tgt.Close() })
	g := newRig(t, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1}})
	cfg := auth.HostConfig{HostNQN: testHostNQN, SubNQN: testSubNQN, Secret: host, CtrlSecret: &ctrl,
		DHGroups: []auth.DHGroupID{auth.FFDHE2048}}

	admin := g.connectQueue(rawOpts{qid: 0, depth: 32}, testSubNQN, testHostNQN)
	if admin.cntlid == 0 { // connectQueue keeps DW0's low 16 bits
		t.Fatal("no CNTLID")
	}
	if err := authOver(g, admin, cfg, 1); err != nil {
		t.Fatalf("admin queue: %v", err)
	}
	var s nvme.SQE
	s.SetPropertySet(nvme.PropCC, false, 1|4<<20|6<<16)
	s.SetCID(2)
	s.SetPSDT(nvme.PSDTSGL)
	s.SGL1().SetNull()
	admin.mustOK(g.ctx, &s, nil)
	io := g.mustDial(rawOpts{qid: 1, depth: 8, dataSize: 64 << 10})
	d := nvme.ConnectData{CNTLID: admin.cntlid, SubNQN: testSubNQN, HostNQN: testHostNQN}
	cs, icd := io.connectSQE(5, 1, true, 0, d)
	if c := io.mustOK(g.ctx, &cs, icd); c.DW0()&(1<<17) == 0 {
		t.Fatalf("I/O Connect DW0 %#x: no ATR", c.DW0())
	}
	r := io.ioSQE(nvme.IORead, 6, 0, 4096, 8192, 0)
	if rsp, err := io.do(g.ctx, &r, nil); err != nil || rsp.cqe.Status() != nvme.StatusAuthRequired.WithDNR() {
		t.Fatalf("read before the I/O queue authenticated: %v %v", err, rsp.cqe.Status())
	}
	if err := authOver(g, io, cfg, 2); err != nil {
		t.Fatalf("I/O queue: %v", err)
	}
	fill(io.data()[:4096], 7)
	w := io.ioSQE(nvme.IOWrite, 7, 0, 4096, 0, 0)
	io.mustOK(g.ctx, &w, nil)
	r = io.ioSQE(nvme.IORead, 8, 0, 4096, 8192, 0)
	io.mustOK(g.ctx, &r, nil)
	if !bytes.Equal(io.data()[:4096], io.data()[8192:8192+4096]) {
		t.Fatal("data read back differs")
	}

	// A wrong host secret: AUTH_Failure1 arrives, then the target closes
	// the connection.
	wrong := host
	wrong.Key = bytes.Clone(host.Key)
	wrong.Key[5] ^= 0x40
	bad := g.connectQueue(rawOpts{qid: 0, depth: 32}, testSubNQN, testHostNQN)
	err = authOver(g, bad, auth.HostConfig{HostNQN: testHostNQN, SubNQN: testSubNQN, Secret: wrong}, 1)
	var f *auth.Failure
	if !errors.As(err, &f) || f.ID != auth.MsgFailure1 {
		t.Fatalf("wrong secret: host got %v, want AUTH_Failure1", err)
	}
	s.SetPropertyGet(nvme.PropCSTS, false)
	s.SetCID(9)
	if rsp, err := bad.do(g.ctx, &s, nil); err != nil || rsp.cqe.Status() != nvme.StatusAuthRequired.WithDNR() {
		t.Fatalf("after the failure: %v %v", err, rsp.cqe.Status())
	}
	// Nothing more is sent: the next event is the disconnect, about
	// authFailureLinger after the failure.
	if _, err := bad.response(g.ctx); !errors.Is(err, errQueueDead) {
		t.Fatalf("waiting for the disconnect: %v", err)
	}
	if n := tgt.Stats().AuthFailures; n != 1 {
		t.Fatalf("AuthFailures %d", n)
	}
}
