package verbstest

import (
	"bytes"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

func testMemoryRegistration(t *testing.T, e Env) {
	mem := newArena(t)
	devs, err := e.Server.Devices()
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	pd, err := devs[0].AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	buf := mem.alloc(3 * 4096)

	for _, acc := range []verbs.Access{verbs.AccessRemoteWrite, verbs.AccessRemoteAtomic,
		verbs.AccessRemoteWrite | verbs.AccessRemoteRead} {
		if mr, err := pd.RegisterMemory(buf, acc); !isErr(err, verbs.ErrInvalid) {
			if mr != nil {
				mr.Close()
			}
			t.Fatalf("RegisterMemory with %#x (no local write): %v, want ErrInvalid", acc, err)
		}
	}
	if _, err := pd.RegisterMemory(nil, verbs.AccessLocalWrite); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("RegisterMemory(empty): %v, want ErrInvalid", err)
	}

	a, err := pd.RegisterMemory(buf[:4096], allAccess)
	if err != nil {
		t.Fatalf("RegisterMemory: %v", err)
	}
	b, err := pd.RegisterMemory(buf[4096+100:], verbs.AccessRemoteRead)
	if err != nil {
		t.Fatalf("RegisterMemory at an offset: %v", err)
	}
	if a.Addr() != uint64(uintptr(unsafe.Pointer(&buf[0]))) || b.Addr() != a.Addr()+4096+100 {
		t.Fatalf("Addr %#x / %#x do not match the buffers", a.Addr(), b.Addr())
	}
	if len(a.Buf()) != 4096 || &a.Buf()[0] != &buf[0] || len(b.Buf()) != len(buf)-4196 {
		t.Fatalf("Buf does not return the registered memory")
	}
	if a.Access() != allAccess || b.Access() != verbs.AccessRemoteRead {
		t.Fatalf("Access %#x / %#x", a.Access(), b.Access())
	}
	if a.LKey() == b.LKey() || a.RKey() == b.RKey() {
		t.Fatalf("two MRs share keys: %#x/%#x %#x/%#x", a.LKey(), a.RKey(), b.LKey(), b.RKey())
	}
	if err := pd.Close(); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("PD Close with MRs: %v, want ErrInvalid", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("MR Close: %v", err)
	}
	if err := a.Close(); !isErr(err, verbs.ErrClosed) {
		t.Fatalf("second MR Close: %v, want ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("MR Close: %v", err)
	}
	if err := pd.Close(); err != nil {
		t.Fatalf("PD Close: %v", err)
	}
}

func testSendRecvMultiSGE(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	if p.c.qp.Cap().MaxSendSGE < 3 || p.s.qp.Cap().MaxRecvSGE < 2 {
		t.Skip("needs 3 send and 2 receive SGEs")
	}
	src1, src2 := p.mem.alloc(4096), p.mem.alloc(4096)
	dst := p.mem.alloc(8192)
	m1, m2 := p.c.reg(src1, 0), p.c.reg(src2, verbs.AccessLocalWrite)
	md := p.s.reg(dst, verbs.AccessLocalWrite)
	fill(src1, 1)
	fill(src2, 100)
	// Gather 3 pieces (300 + 500 + 200 = 1000 bytes) and scatter them into
	// receive segments of 700 and 1000 bytes.
	p.s.postRecv(verbs.RecvWR{ID: 5, SGL: []verbs.SGE{sge(md, 0, 700), sge(md, 4096, 1000)}})
	p.c.postSend(verbs.SendWR{ID: 6, Opcode: verbs.OpSend, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(m1, 10, 300), sge(m2, 0, 500), sge(m1, 2000, 200)}})
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(6))
	rw := waitWC(t, p.ctx, p.s.rcq, 1)
	expectStatus(t, rw, ok(5))
	if rw[0].ByteLen != 1000 || rw[0].Opcode != verbs.WCRecv || rw[0].Flags != 0 {
		t.Fatalf("receive completion %+v", rw[0])
	}
	want := append(append(append([]byte{}, src1[10:310]...), src2[:500]...), src1[2000:2200]...)
	got := append(append([]byte{}, dst[:700]...), dst[4096:4096+300]...)
	if !bytes.Equal(got, want) {
		t.Fatalf("scattered data differs")
	}
	if !bytes.Equal(dst[4096+300:4096+1000], make([]byte, 700)) {
		t.Fatalf("bytes beyond the message were written")
	}
}

func testWrite(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	src, dst := p.mem.alloc(8192), p.mem.alloc(8192)
	ms, md := p.c.reg(src, 0), p.s.reg(dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	fill(src, 3)
	p.c.postSend(
		verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(ms, 0, 4096)}, RemoteAddr: md.Addr() + 100, RKey: md.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(ms, 4096, 50), sge(ms, 5000, 50)}, RemoteAddr: md.Addr() + 8192 - 100, RKey: md.RKey()},
		// Zero-length writes need no valid rkey.
		verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled},
	)
	wcs := waitWC(t, p.ctx, p.c.scq, 3)
	expectStatus(t, wcs, ok(1), ok(2), ok(3))
	if wcs[0].Opcode != verbs.WCRDMAWrite || wcs[0].QPNum != p.c.qp.Num() {
		t.Fatalf("write completion %+v", wcs[0])
	}
	if !bytes.Equal(dst[100:4196], src[:4096]) || !bytes.Equal(dst[8092:8142], src[4096:4146]) ||
		!bytes.Equal(dst[8142:], src[5000:5050]) {
		t.Fatalf("written data differs")
	}
	if !bytes.Equal(dst[:100], make([]byte, 100)) {
		t.Fatalf("bytes before the target were written")
	}
	expectNoWC(t, p.s.rcq) // a plain WRITE consumes no receive
}

func testRead(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	src, dst := p.mem.alloc(8192), p.mem.alloc(8192)
	ms := p.s.reg(src, verbs.AccessRemoteRead)
	md := p.c.reg(dst, verbs.AccessLocalWrite)
	fill(src, 9)
	p.c.postSend(
		verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(md, 0, 3000)}, RemoteAddr: ms.Addr() + 7, RKey: ms.RKey()},
		verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(md, 4096, 10), sge(md, 5000, 20)}, RemoteAddr: ms.Addr() + 8192 - 30, RKey: ms.RKey()},
	)
	wcs := waitWC(t, p.ctx, p.c.scq, 2)
	expectStatus(t, wcs, ok(1), ok(2))
	if wcs[0].Opcode != verbs.WCRDMARead {
		t.Fatalf("read completion %+v", wcs[0])
	}
	if !bytes.Equal(dst[:3000], src[7:3007]) || !bytes.Equal(dst[4096:4106], src[8162:8172]) ||
		!bytes.Equal(dst[5000:5020], src[8172:]) {
		t.Fatalf("read data differs")
	}
}

func testLargeTransfers(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	const size = 1 << 20
	a, b := p.mem.alloc(size), p.mem.alloc(size)
	ma := p.c.reg(a, verbs.AccessLocalWrite)
	mb := p.s.reg(b, allAccess)
	fill(a, 77)
	p.c.postSend(verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(ma, 0, size)}, RemoteAddr: mb.Addr(), RKey: mb.RKey()})
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
	if !bytes.Equal(a, b) {
		t.Fatalf("1 MiB write differs")
	}
	fill(b, 5)
	p.c.postSend(verbs.SendWR{ID: 2, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(ma, 0, size)}, RemoteAddr: mb.Addr(), RKey: mb.RKey()})
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(2))
	if !bytes.Equal(a, b) {
		t.Fatalf("1 MiB read differs")
	}
}

func testWithImm(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	src, dst := p.mem.alloc(4096), p.mem.alloc(4096)
	ms, md := p.c.reg(src, 0), p.s.reg(dst, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	fill(src, 11)
	p.s.postRecv(
		verbs.RecvWR{ID: 1, SGL: []verbs.SGE{sge(md, 0, 256)}},
		verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge(md, 256, 256)}},
	)
	p.c.postSend(
		verbs.SendWR{ID: 10, Opcode: verbs.OpSendWithImm, Flags: verbs.SendSignaled, Imm: 0xdeadbeef,
			SGL: []verbs.SGE{sge(ms, 0, 16)}},
		verbs.SendWR{ID: 11, Opcode: verbs.OpRDMAWriteWithImm, Flags: verbs.SendSignaled, Imm: 0x12345678,
			SGL: []verbs.SGE{sge(ms, 100, 64)}, RemoteAddr: md.Addr() + 1024, RKey: md.RKey()},
	)
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 2), ok(10), ok(11))
	rw := waitWC(t, p.ctx, p.s.rcq, 2)
	expectStatus(t, rw, ok(1), ok(2))
	if rw[0].Opcode != verbs.WCRecv || rw[0].Flags&verbs.WCWithImm == 0 || rw[0].Imm != 0xdeadbeef || rw[0].ByteLen != 16 {
		t.Fatalf("SEND_WITH_IMM receive %+v", rw[0])
	}
	if rw[1].Opcode != verbs.WCRecvRDMAWithImm || rw[1].Flags&verbs.WCWithImm == 0 || rw[1].Imm != 0x12345678 {
		t.Fatalf("WRITE_WITH_IMM receive %+v", rw[1])
	}
	if !bytes.Equal(dst[:16], src[:16]) || !bytes.Equal(dst[1024:1088], src[100:164]) {
		t.Fatalf("data differs")
	}
	if !bytes.Equal(dst[256:512], make([]byte, 256)) {
		t.Fatalf("WRITE_WITH_IMM wrote into the receive buffer")
	}
}

// testSendWithInv checks what every provider guarantees of SEND_WITH_INV:
// without verbs.CapSendWithInv the post fails with ErrNotSupported; where
// the responder's MR may be remotely invalidated (Env.RemoteInvalidateUserMR)
// the receive reports WCWithInv and the rkey. Whether later accesses
// through the rkey fail is a reference test (soft).
func testSendWithInv(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	sbuf, cbuf := p.mem.alloc(4096), p.mem.alloc(4096)
	ms := p.s.reg(sbuf, verbs.AccessLocalWrite)
	mc := p.c.reg(cbuf[:2048], verbs.AccessLocalWrite)
	target := p.c.reg(cbuf[2048:], allAccess) // the host buffer the server invalidates
	wr := verbs.SendWR{ID: 1, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled,
		InvalidateRKey: target.RKey(), SGL: []verbs.SGE{sge(ms, 0, 16)}}
	if !p.s.dev.Attr().Caps.Has(verbs.CapSendWithInv) {
		n, err := p.s.qp.PostSend([]verbs.SendWR{wr})
		if n != 0 || !isErr(err, verbs.ErrNotSupported) {
			t.Fatalf("SEND_WITH_INV without the capability: %d, %v; want 0, ErrNotSupported", n, err)
		}
		return
	}
	if !e.RemoteInvalidateUserMR {
		t.Skip("only fast-register MRs and memory windows may be remotely invalidated on this provider, and the verbs API has neither")
	}
	p.c.postRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge(mc, 0, 64)}})
	p.s.postSend(wr)
	expectStatus(t, waitWC(t, p.ctx, p.s.scq, 1), ok(1))
	rw := waitWC(t, p.ctx, p.c.rcq, 1)
	expectStatus(t, rw, ok(2))
	if rw[0].Flags&verbs.WCWithInv == 0 || rw[0].InvalidatedRKey != target.RKey() {
		t.Fatalf("receive %+v, want WithInv of rkey %#x", rw[0], target.RKey())
	}
}

func testInline(t *testing.T, e Env) {
	mem := newArena(t)
	ctx := testCtx(t)
	ln := listen(t, e)
	cid := resolve(t, ctx, e, ln.Addr())
	max := cid.Device().Attr().MaxInlineData
	if max == 0 {
		c := cid.Device()
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatalf("AllocPD: %v", err)
		}
		defer pd.Close()
		cq := mustCQ(t, c, 8)
		if _, err := cid.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: 1}}); !isErr(err, verbs.ErrInvalid) {
			t.Fatalf("CreateQP with inline data on a device without: %v, want ErrInvalid", err)
		}
	}
	ln.Close()
	p := connect(t, e, pairConfig{client: sideConfig{cap: func() verbs.QPCap {
		c := defaultCap(cid.Device().Attr())
		c.MaxInlineData = min(max, 64)
		return c
	}()}})
	src, dst := mem.alloc(4096), mem.alloc(4096)
	ms, md := p.c.reg(src, 0), p.s.reg(dst, verbs.AccessLocalWrite)
	copy(src, "inline-payload")
	wr := verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled | verbs.SendInline, SGL: []verbs.SGE{sge(ms, 0, 14)}}
	if max == 0 {
		n, err := p.c.qp.PostSend([]verbs.SendWR{wr})
		if n != 0 || (!isErr(err, verbs.ErrNotSupported) && !isErr(err, verbs.ErrInvalid)) {
			t.Fatalf("inline send without inline support: %d, %v", n, err)
		}
		return
	}
	p.s.postRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge(md, 0, 64)}})
	p.c.postSend(wr)
	copy(src, "OVERWRITTEN!!!") // inline data was copied at post time
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
	expectStatus(t, waitWC(t, p.ctx, p.s.rcq, 1), ok(2))
	if string(dst[:14]) != "inline-payload" {
		t.Fatalf("inline payload %q", dst[:14])
	}
	over := wr
	over.SGL = []verbs.SGE{sge(ms, 0, p.c.qp.Cap().MaxInlineData+1)}
	if n, err := p.c.qp.PostSend([]verbs.SendWR{over}); n != 0 || !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("inline send above MaxInlineData: %d, %v; want 0, ErrInvalid", n, err)
	}
}

func testCompletionOrdering(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	src, dst, rd := p.mem.alloc(65536), p.mem.alloc(65536), p.mem.alloc(65536)
	ms := p.c.reg(src, 0)
	mr := p.c.reg(rd, verbs.AccessLocalWrite)
	md := p.s.reg(dst, allAccess)
	fill(dst, 1)
	const n = 40
	for i := 0; i < n/4; i++ {
		p.s.postRecv(verbs.RecvWR{ID: uint64(1000 + i), SGL: []verbs.SGE{sge(md, 60000, 1000)}})
	}
	var wrs []verbs.SendWR
	var want []wantWC
	for i := uint64(0); i < n; i++ {
		wr := verbs.SendWR{ID: i}
		off := int(i) * 1024
		switch i % 4 {
		case 0:
			wr.Opcode, wr.SGL = verbs.OpSend, []verbs.SGE{sge(ms, off, 100)}
		case 1:
			wr.Opcode, wr.SGL = verbs.OpRDMAWrite, []verbs.SGE{sge(ms, off, 4000)}
			wr.RemoteAddr, wr.RKey = md.Addr()+uint64(off), md.RKey()
		case 2:
			wr.Opcode, wr.SGL = verbs.OpRDMARead, []verbs.SGE{sge(mr, off, 1024)}
			wr.RemoteAddr, wr.RKey = md.Addr()+uint64(off), md.RKey()
		case 3:
			wr.Opcode, wr.SGL = verbs.OpRDMAWrite, []verbs.SGE{sge(ms, off, 10)}
			wr.RemoteAddr, wr.RKey = md.Addr()+uint64(off), md.RKey()
		}
		if i%3 != 1 || i == n-1 { // some WRs unsignaled, the last signaled
			wr.Flags = verbs.SendSignaled
			want = append(want, ok(i))
		}
		wrs = append(wrs, wr)
	}
	p.c.postSend(wrs...)
	wcs := waitWC(t, p.ctx, p.c.scq, len(want))
	expectStatus(t, wcs, want...)
	expectNoWC(t, p.c.scq)
	for _, wc := range wcs {
		wantOp := []verbs.WCOpcode{verbs.WCSend, verbs.WCRDMAWrite, verbs.WCRDMARead, verbs.WCRDMAWrite}[wc.ID%4]
		if wc.Opcode != wantOp {
			t.Fatalf("completion %d opcode %v, want %v", wc.ID, wc.Opcode, wantOp)
		}
	}
	rws := waitWC(t, p.ctx, p.s.rcq, n/4)
	for i, wc := range rws {
		if wc.ID != uint64(1000+i) || wc.Status != verbs.WCSuccess {
			t.Fatalf("receive %d: %+v", i, wc)
		}
	}
}

func testReadDepthORD(t *testing.T, e Env) {
	// The server accepts with responder resources 1: the client may keep
	// one READ outstanding. Posting many READs must neither fail nor break
	// the server's IRD.
	accept := verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	p := connect(t, e, pairConfig{accept: &accept})
	if p.accepted.InitiatorDepth != 1 {
		t.Fatalf("client initiator depth %d, want 1", p.accepted.InitiatorDepth)
	}
	const n, size = 16, 32 << 10
	src, dst := p.mem.alloc(n*size), p.mem.alloc(n*size)
	ms := p.s.reg(src, verbs.AccessRemoteRead)
	md := p.c.reg(dst, verbs.AccessLocalWrite)
	fill(src, 42)
	var wrs []verbs.SendWR
	var want []wantWC
	for i := 0; i < n; i++ {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(md, i*size, size)}, RemoteAddr: ms.Addr() + uint64(i*size), RKey: ms.RKey()})
		want = append(want, ok(uint64(i)))
	}
	p.c.postSend(wrs...)
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, n), want...)
	if !bytes.Equal(src, dst) {
		t.Fatalf("read data differs")
	}
	if e.ReadsHighWater != nil {
		hw, err := e.ReadsHighWater(p.c.qp)
		if err != nil {
			t.Fatalf("ReadsHighWater: %v", err)
		}
		if hw != 1 {
			t.Fatalf("%d READs were outstanding at once, ORD is 1", hw)
		}
	}
}

func testNotifyPending(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	buf := p.mem.alloc(4096)
	mc, md := p.c.reg(buf[:2048], 0), p.s.reg(buf[2048:], allAccess)
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	p.c.postSend(verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(mc, 0, 8)}, RemoteAddr: md.Addr(), RKey: md.RKey()})
	select {
	case <-p.c.scq.Notify():
	case <-p.ctx.Done():
		t.Fatalf("no completion event")
	}
	// The completion is still queued: arming again must signal at once,
	// and Wait must return.
	if err := verbs.Wait(p.ctx, p.c.scq); err != nil {
		t.Fatalf("Wait with a queued completion: %v", err)
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
}

// testNotifyRouted: a CQ's tokens go to a consumer's channel after
// RouteNotify (also the pending-completion token of ReqNotify), Notify
// returns that channel, and RouteNotify(nil) brings them back.
func testNotifyRouted(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	r, isRouter := p.c.scq.(verbs.NotifyRouter)
	if !isRouter {
		t.Fatalf("%T does not implement verbs.NotifyRouter", p.c.scq)
	}
	own := p.c.scq.Notify()
	bell := make(chan struct{}, 1)
	r.RouteNotify(bell)
	if p.c.scq.Notify() != (<-chan struct{})(bell) {
		t.Fatal("Notify does not return the routed channel")
	}
	buf := p.mem.alloc(4096)
	mc, md := p.c.reg(buf[:2048], 0), p.s.reg(buf[2048:], allAccess)
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	p.c.postSend(verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(mc, 0, 8)}, RemoteAddr: md.Addr(), RKey: md.RKey()})
	select {
	case <-bell:
	case <-p.ctx.Done():
		t.Fatal("no completion event on the routed channel")
	}
	select {
	case <-own:
		t.Fatal("a routed CQ signalled its own channel")
	default:
	}
	r.RouteNotify(nil)
	if p.c.scq.Notify() != own {
		t.Fatal("RouteNotify(nil) did not restore the CQ's own channel")
	}
	// The completion is still queued: arming signals at once, on the
	// CQ's own channel now.
	if err := verbs.Wait(p.ctx, p.c.scq); err != nil {
		t.Fatalf("Wait after routing back: %v", err)
	}
	select {
	case <-bell:
		t.Fatal("a token went to the channel the CQ was routed away from")
	default:
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
}

// testArmReporter: Armed holds from ReqNotify on an empty CQ until the
// completion event (the provider clears it before the token arrives),
// and a drained CQ arms again.
func testArmReporter(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	a, isReporter := p.c.scq.(verbs.ArmReporter)
	if !isReporter {
		t.Fatalf("%T does not implement verbs.ArmReporter", p.c.scq)
	}
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	if !a.Armed() {
		t.Fatal("an empty CQ is not armed after ReqNotify")
	}
	write := signaledWriter(p)
	write(1)
	select {
	case <-p.c.scq.Notify():
	case <-p.ctx.Done():
		t.Fatal("no completion event")
	}
	if a.Armed() {
		t.Fatal("still armed after the completion event's token")
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
	// Drained, it arms again.
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	if !a.Armed() {
		t.Fatal("a drained CQ is not armed after ReqNotify")
	}
}
