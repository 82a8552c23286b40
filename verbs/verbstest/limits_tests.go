package verbstest

import (
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
)

func testDeviceLimits(t *testing.T, e Env) {
	ctx := testCtx(t)
	ln := listen(t, e)
	id := resolve(t, ctx, e, ln.Addr())
	d := id.Device()
	a := d.Attr()
	for _, c := range []struct {
		name     string
		cqe, vec int
	}{{"TooDeep", a.MaxCQE + 1, 0}, {"Empty", 0, 0}, {"BadVector", 1, a.NumCompVectors}, {"NegativeVector", 1, -1}} {
		if cq, err := d.CreateCQ(c.cqe, c.vec); !isErr(err, verbs.ErrInvalid) {
			if cq != nil {
				cq.Close()
			}
			t.Fatalf("CreateCQ %s (%d, %d): %v, want ErrInvalid", c.name, c.cqe, c.vec, err)
		}
	}
	pd, err := d.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	t.Cleanup(func() {
		if err := pd.Close(); err != nil {
			t.Errorf("PD Close: %v", err)
		}
	})
	cq := mustCQ(t, d, 16)
	base := verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}
	bad := []struct {
		name string
		mod  func(*verbs.QPCap)
	}{
		{"SendWR", func(c *verbs.QPCap) { c.MaxSendWR = a.MaxQPWR + 1 }},
		{"RecvWR", func(c *verbs.QPCap) { c.MaxRecvWR = a.MaxQPWR + 1 }},
		{"SendSGE", func(c *verbs.QPCap) { c.MaxSendSGE = a.MaxSGE + 1 }},
		{"RecvSGE", func(c *verbs.QPCap) { c.MaxRecvSGE = a.MaxSGE + 1 }},
		{"Inline", func(c *verbs.QPCap) { c.MaxInlineData = a.MaxInlineData + 1 }},
	}
	for _, b := range bad {
		c := base
		b.mod(&c)
		if qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: c}); !isErr(err, verbs.ErrInvalid) {
			if qp != nil {
				qp.Close()
			}
			t.Fatalf("CreateQP above the %s limit (%+v): %v, want ErrInvalid", b.name, c, err)
		}
	}
	// Exactly at the limits works.
	c := verbs.QPCap{MaxSendWR: a.MaxQPWR, MaxRecvWR: a.MaxQPWR, MaxSendSGE: a.MaxSGE, MaxRecvSGE: a.MaxSGE, MaxInlineData: a.MaxInlineData}
	qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: c})
	if err != nil {
		t.Fatalf("CreateQP at the device limits %+v: %v", c, err)
	}
	got := qp.Cap()
	if got.MaxSendWR < c.MaxSendWR || got.MaxRecvWR < c.MaxRecvWR || got.MaxSendSGE < c.MaxSendSGE ||
		got.MaxRecvSGE < c.MaxRecvSGE || got.MaxInlineData < c.MaxInlineData {
		t.Fatalf("Cap %+v below the requested %+v", got, c)
	}
	if qp.Num() == 0 {
		t.Fatalf("QP number 0")
	}
	if _, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq, Cap: base}); err == nil {
		t.Fatalf("second CreateQP on one ID succeeded")
	}
	if err := cq.Close(); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("CQ Close while a QP uses it: %v, want ErrInvalid", err)
	}
	if err := pd.Close(); !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("PD Close while a QP uses it: %v, want ErrInvalid", err)
	}
	if err := qp.Close(); err != nil {
		t.Fatalf("QP Close: %v", err)
	}
}

func testPostLimits(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{client: sideConfig{cap: verbs.QPCap{MaxSendWR: 8, MaxRecvWR: 4, MaxSendSGE: 2, MaxRecvSGE: 2}}})
	buf := p.mem.alloc(8192)
	mc, md := p.c.reg(buf[:4096], verbs.AccessLocalWrite), p.s.reg(buf[4096:], allAccess)
	cp := p.c.qp.Cap()
	good := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(mc, 0, 8)},
		RemoteAddr: md.Addr(), RKey: md.RKey()}
	tooMany := good
	tooMany.ID = 2
	tooMany.SGL = nil
	for i := 0; i <= cp.MaxSendSGE; i++ {
		tooMany.SGL = append(tooMany.SGL, sge(mc, 8*i, 8))
	}
	n, err := p.c.qp.PostSend([]verbs.SendWR{good, tooMany, good})
	if n != 1 || !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("PostSend with %d SGEs (cap %d) second: %d, %v; want 1, ErrInvalid", len(tooMany.SGL), cp.MaxSendSGE, n, err)
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(1))
	badOp := good
	badOp.Opcode = 0x7f
	if n, err := p.c.qp.PostSend([]verbs.SendWR{badOp}); n != 0 || !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("PostSend with opcode 0x7f: %d, %v; want 0, ErrInvalid", n, err)
	}
	rr := verbs.RecvWR{ID: 3}
	for i := 0; i <= p.c.qp.Cap().MaxRecvSGE; i++ {
		rr.SGL = append(rr.SGL, sge(mc, 8*i, 8))
	}
	if n, err := p.c.qp.PostRecv([]verbs.RecvWR{rr}); n != 0 || !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("PostRecv with too many SGEs: %d, %v; want 0, ErrInvalid", n, err)
	}
	// Receive queue capacity.
	var rws []verbs.RecvWR
	for i := 0; i <= p.c.qp.Cap().MaxRecvWR; i++ {
		rws = append(rws, verbs.RecvWR{ID: uint64(10 + i), SGL: []verbs.SGE{sge(mc, 0, 8)}})
	}
	if n, err := p.c.qp.PostRecv(rws); n != len(rws)-1 || !isErr(err, verbs.ErrQueueFull) {
		t.Fatalf("PostRecv beyond the queue: %d of %d, %v; want %d, ErrQueueFull", n, len(rws), err, len(rws)-1)
	}
	// READ SGE limit, where it is below the send SGE limit.
	a := p.c.dev.Attr()
	if a.MaxSGERd >= a.MaxSGE {
		return
	}
	p.ln.Close() // the Env may use a fixed port
	q := connect(t, e, pairConfig{client: sideConfig{cap: verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: a.MaxSGE, MaxRecvSGE: 1}}})
	rbuf := q.mem.alloc(4096)
	rm, rs := q.c.reg(rbuf[:2048], verbs.AccessLocalWrite), q.s.reg(rbuf[2048:], allAccess)
	read := verbs.SendWR{ID: 1, Opcode: verbs.OpRDMARead, RemoteAddr: rs.Addr(), RKey: rs.RKey()}
	for i := 0; i <= a.MaxSGERd; i++ {
		read.SGL = append(read.SGL, sge(rm, i, 1))
	}
	if n, err := q.c.qp.PostSend([]verbs.SendWR{read}); n != 0 || !isErr(err, verbs.ErrInvalid) {
		t.Fatalf("READ with %d SGEs (max_sge_rd %d): %d, %v; want 0, ErrInvalid", len(read.SGL), a.MaxSGERd, n, err)
	}
}

func testSendQueueFull(t *testing.T, e Env) {
	// SENDs to a peer without receives stay outstanding (RNR, retried
	// forever), so the send queue fills deterministically.
	p := rnrPair(t, e, 7, pairConfig{client: sideConfig{cap: verbs.QPCap{MaxSendWR: 6, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}})
	depth := p.c.qp.Cap().MaxSendWR
	buf := p.mem.alloc(8192)
	mc, ms := p.c.reg(buf[:4096], 0), p.s.reg(buf[4096:], verbs.AccessLocalWrite)
	var wrs []verbs.SendWR
	for i := 0; i <= depth; i++ {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(mc, 0, 8)}})
	}
	n, err := p.c.qp.PostSend(wrs)
	if n != depth || !isErr(err, verbs.ErrQueueFull) {
		t.Fatalf("PostSend of %d into a queue of %d: %d, %v; want %d, ErrQueueFull", len(wrs), depth, n, err, depth)
	}
	if n, err := p.c.qp.PostSend(wrs[depth:]); n != 0 || !isErr(err, verbs.ErrQueueFull) {
		t.Fatalf("PostSend into a full queue: %d, %v", n, err)
	}
	var want []wantWC
	for i := 0; i < depth; i++ {
		if i < p.s.qp.Cap().MaxRecvWR {
			p.s.postRecv(verbs.RecvWR{ID: uint64(100 + i), SGL: []verbs.SGE{sge(ms, 0, 64)}})
		}
		want = append(want, ok(uint64(i)))
	}
	// Receives for the rest once the first ones are consumed.
	got := waitWC(t, p.ctx, p.s.rcq, min(depth, p.s.qp.Cap().MaxRecvWR))
	for i := len(got); i < depth; i++ {
		p.s.postRecv(verbs.RecvWR{ID: uint64(100 + i), SGL: []verbs.SGE{sge(ms, 0, 64)}})
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, depth), want...)
	// Completions freed the slots.
	p.s.postRecv(verbs.RecvWR{ID: 200, SGL: []verbs.SGE{sge(ms, 0, 64)}})
	p.c.postSend(wrs[depth])
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(uint64(depth)))
}
