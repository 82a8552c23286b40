package verbstest

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
)

func testDeviceAttr(t *testing.T, e Env) {
	for _, p := range []verbs.Provider{e.Server, e.Client} {
		if p.Name() == "" {
			t.Errorf("provider has no name")
		}
		devs, err := p.Devices()
		if err != nil || len(devs) == 0 {
			t.Fatalf("Devices: %v, %v", devs, err)
		}
		for _, d := range devs {
			a := d.Attr()
			if d.Name() == "" {
				t.Errorf("device without a name")
			}
			checks := []struct {
				name string
				ok   bool
			}{
				{"MaxQPWR ≥ 1", a.MaxQPWR >= 1},
				{"MaxSGE ≥ 1", a.MaxSGE >= 1},
				{"1 ≤ MaxSGERd ≤ MaxSGE", a.MaxSGERd >= 1 && a.MaxSGERd <= a.MaxSGE},
				{"MaxCQE ≥ 1", a.MaxCQE >= 1},
				{"MaxCQ ≥ 1", a.MaxCQ >= 1},
				{"MaxQP ≥ 1", a.MaxQP >= 1},
				{"MaxMR ≥ 1", a.MaxMR >= 1},
				{"MaxPD ≥ 1", a.MaxPD >= 1},
				{"MaxMRSize ≥ 4096", a.MaxMRSize >= 4096},
				{"NumCompVectors ≥ 1", a.NumCompVectors >= 1},
				{"MaxInlineData ≥ 0", a.MaxInlineData >= 0},
				{"CapSRQ iff MaxSRQ > 0", a.Caps.Has(verbs.CapSRQ) == (a.MaxSRQ > 0)},
			}
			for _, c := range checks {
				if !c.ok {
					t.Errorf("device %s: %s fails: %+v", d.Name(), c.name, a)
				}
			}
		}
	}
	ctx := testCtx(t)
	ln := listen(t, e)
	id := resolve(t, ctx, e, ln.Addr())
	if id.Device() == nil || id.Device().Name() == "" {
		t.Fatalf("resolved ID has no device")
	}
	if id.QP() != nil {
		t.Fatalf("fresh ID has a QP")
	}
}

func testConnectPrivateData(t *testing.T, e Env) {
	mem := newArena(t)
	ctx := testCtx(t)
	ln := listen(t, e)
	cid := resolve(t, ctx, e, ln.Addr())
	c := newSide(t, cid, sideConfig{})
	ca := c.dev.Attr()
	if ca.MaxQPRdAtom < 3 || ca.MaxQPInitRdAtom < 2 {
		t.Skipf("device READ depth %d/%d too small", ca.MaxQPRdAtom, ca.MaxQPInitRdAtom)
	}
	reqData := bytes.Repeat([]byte{0xa5, 0x01}, 16) // 32 bytes, like the NVMe-oF request
	ch := startConnect(ctx, cid, verbs.ConnParam{
		PrivateData: reqData, ResponderResources: 3, InitiatorDepth: 2, RetryCount: 7, RNRRetryCount: 7,
	})
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	if len(req.Param.PrivateData) < len(reqData) || !bytes.Equal(req.Param.PrivateData[:len(reqData)], reqData) {
		t.Fatalf("request private data %x, want prefix %x", req.Param.PrivateData, reqData)
	}
	// The passive side sees the request from its point of view.
	if req.Param.ResponderResources != 2 || req.Param.InitiatorDepth != 3 {
		t.Fatalf("request RR/ID = %d/%d, want 2/3 (swapped)", req.Param.ResponderResources, req.Param.InitiatorDepth)
	}
	if req.Param.RNRRetryCount != 7 {
		t.Fatalf("request RNR retry %d, want 7", req.Param.RNRRetryCount)
	}
	s := newSide(t, req.ID, sideConfig{})
	sa := s.dev.Attr()
	if sa.MaxQPRdAtom < 2 || sa.MaxQPInitRdAtom < 3 {
		t.Skipf("server READ depth %d/%d too small", sa.MaxQPRdAtom, sa.MaxQPInitRdAtom)
	}
	repData := []byte("accepted-by-server")
	if err := req.ID.Accept(ctx, verbs.ConnParam{
		PrivateData: repData, ResponderResources: 2, InitiatorDepth: 3, RetryCount: 7, RNRRetryCount: 7,
	}); err != nil {
		t.Fatalf("ConnID.Accept: %v", err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("Connect: %v", r.err)
	}
	if len(r.p.PrivateData) < len(repData) || !bytes.Equal(r.p.PrivateData[:len(repData)], repData) {
		t.Fatalf("reply private data %q, want prefix %q", r.p.PrivateData, repData)
	}
	// From the client's point of view: it may issue as many READs as the
	// server serves, and serves as many as the server issues.
	if r.p.InitiatorDepth != 2 || r.p.ResponderResources != 3 {
		t.Fatalf("Connect returned ID/RR %d/%d, want 2/3", r.p.InitiatorDepth, r.p.ResponderResources)
	}
	for _, id := range []verbs.ConnID{cid, req.ID} {
		if id.Err() != nil {
			t.Fatalf("connected ID has Err %v", id.Err())
		}
		select {
		case <-id.Done():
			t.Fatalf("connected ID is done")
		default:
		}
		if id.LocalAddr() == "" || id.RemoteAddr() == "" {
			t.Fatalf("addresses %q %q", id.LocalAddr(), id.RemoteAddr())
		}
	}
	if cid.QP() != c.qp || req.ID.QP() != s.qp {
		t.Fatalf("QP() does not return the created QP")
	}
	// The connection carries data.
	buf := mem.alloc(4096)
	smr, cmr := s.reg(buf[:2048], verbs.AccessLocalWrite), c.reg(buf[2048:], 0)
	copy(buf[2048:], "ping")
	s.postRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sge(smr, 0, 64)}})
	c.postSend(verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(cmr, 0, 4)}})
	expectStatus(t, waitWC(t, ctx, c.scq, 1), ok(2))
	rw := waitWC(t, ctx, s.rcq, 1)
	expectStatus(t, rw, ok(1))
	if rw[0].ByteLen != 4 || string(buf[:4]) != "ping" || rw[0].Opcode != verbs.WCRecv || rw[0].QPNum != s.qp.Num() {
		t.Fatalf("receive %+v data %q", rw[0], buf[:4])
	}
}

func testConnectParamLimits(t *testing.T, e Env) {
	ctx := testCtx(t)
	ln := listen(t, e)
	cid := resolve(t, ctx, e, ln.Addr())
	newSide(t, cid, sideConfig{})
	if _, err := cid.Connect(ctx, verbs.ConnParam{PrivateData: make([]byte, verbs.MaxPrivateData+1)}); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("Connect with %d bytes of private data: %v, want ErrInvalid", verbs.MaxPrivateData+1, err)
	}
	if a := cid.Device().Attr(); a.MaxQPInitRdAtom < 254 {
		_, err := cid.Connect(ctx, verbs.ConnParam{InitiatorDepth: uint8(a.MaxQPInitRdAtom + 1)})
		if !isErr(err, verbs.ErrInvalid) {
			t.Fatalf("Connect with initiator depth above the device max: %v, want ErrInvalid", err)
		}
	}
}

func testReject(t *testing.T, e Env) {
	ctx := testCtx(t)
	ln := listen(t, e)
	cid := resolve(t, ctx, e, ln.Addr())
	newSide(t, cid, sideConfig{})
	ch := startConnect(ctx, cid, defaultConnect(cid.Device().Attr()))
	req, err := ln.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	t.Cleanup(func() { req.ID.Close() })
	if err := req.ID.Reject(make([]byte, verbs.MaxRejectPrivateData+1)); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("Reject with too much private data: %v, want ErrInvalid", err)
	}
	rej := []byte{0, 0, 6, 0} // NVMe-oF: recfmt 0, sts 6 (no resources)
	if err := req.ID.Reject(rej); err != nil {
		t.Fatalf("Reject: %v", err)
	}
	r := <-ch
	var re *verbs.RejectError
	if !errors.As(r.err, &re) {
		t.Fatalf("Connect after reject: %v, want *RejectError", r.err)
	}
	if !re.Consumer || len(re.PrivateData) < len(rej) || !bytes.Equal(re.PrivateData[:len(rej)], rej) {
		t.Fatalf("RejectError %+v, want consumer reject with prefix %x", re, rej)
	}
}

func testNoListener(t *testing.T, e Env) {
	ctx := testCtx(t)
	ln, err := e.Server.Listen(e.Addr, verbs.ListenOptions{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	addr := ln.Addr()
	ln.Close()
	if _, err := ln.Accept(ctx); !isErr(err, verbs.ErrClosed) {
		t.Fatalf("Accept on a closed listener: %v, want ErrClosed", err)
	}
	cid, err := e.Client.Resolve(ctx, addr, verbs.ResolveOptions{})
	if err != nil {
		if isErr(err, verbs.ErrUnreachable) {
			return
		}
		t.Fatalf("Resolve: %v", err)
	}
	t.Cleanup(func() { cid.Close() })
	newSide(t, cid, sideConfig{})
	_, err = cid.Connect(ctx, defaultConnect(cid.Device().Attr()))
	var re *verbs.RejectError
	switch {
	case errors.As(err, &re):
		if re.Consumer {
			t.Fatalf("no listener gave a consumer reject")
		}
	case isErr(err, verbs.ErrUnreachable):
	default:
		t.Fatalf("Connect without listener: %v, want ErrUnreachable or non-consumer RejectError", err)
	}
}

func testListenerCloseKeepsConnections(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	if err := p.ln.Close(); err != nil {
		t.Fatalf("listener Close: %v", err)
	}
	buf := p.mem.alloc(4096)
	smr, cmr := p.s.reg(buf[:1024], verbs.AccessLocalWrite), p.c.reg(buf[1024:], 0)
	p.s.postRecv(verbs.RecvWR{ID: 7, SGL: []verbs.SGE{sge(smr, 0, 1024)}})
	p.c.postSend(verbs.SendWR{ID: 8, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(cmr, 0, 100)}})
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(8))
	expectStatus(t, waitWC(t, p.ctx, p.s.rcq, 1), ok(7))
	if p.c.id.Err() != nil || p.s.id.Err() != nil {
		t.Fatalf("connection ended with the listener: %v / %v", p.c.id.Err(), p.s.id.Err())
	}
}

func testSendBeforeConnect(t *testing.T, e Env) {
	mem := newArena(t)
	ctx := testCtx(t)
	ln := listen(t, e)
	cid := resolve(t, ctx, e, ln.Addr())
	c := newSide(t, cid, sideConfig{})
	mr := c.reg(mem.alloc(4096), verbs.AccessLocalWrite)
	n, err := c.qp.PostSend([]verbs.SendWR{{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{sge(mr, 0, 8)}}})
	if n != 0 || !isErr(err, verbs.ErrQPState) {
		t.Fatalf("PostSend before connect: %d, %v; want 0, ErrQPState", n, err)
	}
	// Receives may be posted before the connection exists.
	c.postRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge(mr, 0, 64)}})
}

func testDisconnectFlushes(t *testing.T, e Env) {
	for _, fromClient := range []bool{true, false} {
		name := "FromServer"
		if fromClient {
			name = "FromClient"
		}
		t.Run(name, func(t *testing.T) {
			p := connect(t, e, pairConfig{})
			buf := p.mem.alloc(8192)
			cmr, smr := p.c.reg(buf[:4096], verbs.AccessLocalWrite), p.s.reg(buf[4096:], verbs.AccessLocalWrite)
			for i := uint64(0); i < 3; i++ {
				p.c.postRecv(verbs.RecvWR{ID: 10 + i, SGL: []verbs.SGE{sge(cmr, int(i)*64, 64)}})
				p.s.postRecv(verbs.RecvWR{ID: 20 + i, SGL: []verbs.SGE{sge(smr, int(i)*64, 64)}})
			}
			by, other := p.c, p.s
			if !fromClient {
				by, other = p.s, p.c
			}
			if err := by.id.Disconnect(); err != nil {
				t.Fatalf("Disconnect: %v", err)
			}
			if err := by.id.Disconnect(); err != nil {
				t.Fatalf("second Disconnect: %v", err)
			}
			waitDone(t, p.ctx, by.id, "disconnecting side")
			waitDone(t, p.ctx, other.id, "peer")
			for _, id := range []verbs.ConnID{by.id, other.id} {
				if !isErr(id.Err(), verbs.ErrDisconnected) {
					t.Fatalf("Err after disconnect: %v, want ErrDisconnected", id.Err())
				}
			}
			expectStatus(t, waitWC(t, p.ctx, p.c.rcq, 3), flushed(10), flushed(11), flushed(12))
			expectStatus(t, waitWC(t, p.ctx, p.s.rcq, 3), flushed(20), flushed(21), flushed(22))
			// A post after the disconnect is accepted and flushes.
			bmr := by.reg(p.mem.alloc(4096), 0)
			n, err := by.qp.PostSend([]verbs.SendWR{{ID: 30, Opcode: verbs.OpSend, SGL: []verbs.SGE{sge(bmr, 0, 8)}}})
			if n != 1 || err != nil {
				t.Fatalf("PostSend after disconnect: %d, %v", n, err)
			}
			expectStatus(t, waitWC(t, p.ctx, by.scq, 1), flushed(30))
		})
	}
}

func testCloseNotifiesPeer(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	buf := p.mem.alloc(4096)
	cmr := p.c.reg(buf, verbs.AccessLocalWrite)
	p.c.postRecv(verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sge(cmr, 0, 64)}})
	if err := p.s.id.Close(); err != nil {
		t.Fatalf("server ID Close: %v", err)
	}
	waitDone(t, p.ctx, p.c.id, "client")
	if !isErr(p.c.id.Err(), verbs.ErrDisconnected) {
		t.Fatalf("client Err after server close: %v", p.c.id.Err())
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.rcq, 1), flushed(1))
	if p.s.id.Err() == nil {
		t.Fatalf("closed ID has nil Err")
	}
}
