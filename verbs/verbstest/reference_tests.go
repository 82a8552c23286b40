package verbstest

import (
	"testing"

	"github.com/rdmablk/rdmablk/verbs"
)

// Reference tests (RunReference): the soft provider's exact choices where
// the IB specification or real implementations allow variants.

// A local protection violation completes with exactly WCLocProtErr, and
// receives posted to the QP in error flush.
func testRefLocalProtectionStatus(t *testing.T, e Env) {
	localProtection(t, e, func(id uint64) wantWC { return st(id, verbs.WCLocProtErr) })
	t.Run("PostToErrorQP", func(t *testing.T) { postToErrorQP(t, e, st(1, verbs.WCLocProtErr), true) })
}

// A SEND into a too short receive is a length error at the responder,
// NAKed as an invalid request.
func testRefReceiveTooShortStatus(t *testing.T, e Env) {
	receiveTooShort(t, e, st(1, verbs.WCRemInvReqErr), st(10, verbs.WCLocLenErr))
}

// SEND_WITH_INV invalidates an ordinary MR: the rkey worked before and
// fails with WCRemAccessErr after.
func testRefSendWithInvUserMR(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	if !p.s.dev.Attr().Caps.Has(verbs.CapSendWithInv) || !e.RemoteInvalidateUserMR {
		t.Skip("provider does not invalidate ordinary MRs remotely")
	}
	sbuf, cbuf := p.mem.alloc(4096), p.mem.alloc(4096)
	ms := p.s.reg(sbuf, verbs.AccessLocalWrite)
	mc := p.c.reg(cbuf[:2048], verbs.AccessLocalWrite)
	target := p.c.reg(cbuf[2048:], allAccess)
	p.c.postRecv(verbs.RecvWR{ID: 2, SGL: []verbs.SGE{sge(mc, 0, 64)}})
	p.s.postSend(
		verbs.SendWR{ID: 3, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(ms, 0, 8)}, RemoteAddr: target.Addr(), RKey: target.RKey()},
		verbs.SendWR{ID: 1, Opcode: verbs.OpSendWithInv, Flags: verbs.SendSignaled,
			InvalidateRKey: target.RKey(), SGL: []verbs.SGE{sge(ms, 0, 16)}},
	)
	expectStatus(t, waitWC(t, p.ctx, p.s.scq, 2), ok(3), ok(1))
	rw := waitWC(t, p.ctx, p.c.rcq, 1)
	expectStatus(t, rw, ok(2))
	if rw[0].Flags&verbs.WCWithInv == 0 || rw[0].InvalidatedRKey != target.RKey() {
		t.Fatalf("receive %+v, want WithInv of rkey %#x", rw[0], target.RKey())
	}
	p.s.postSend(verbs.SendWR{ID: 4, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sge(ms, 0, 8)}, RemoteAddr: target.Addr(), RKey: target.RKey()})
	expectStatus(t, waitWC(t, p.ctx, p.s.scq, 1), st(4, verbs.WCRemAccessErr))
}

// After its peer's QP went to error, the requester's next request
// completes with WCRetryExcErr, the following one flushes, and the
// connection stays up.
func testRefPeerErrorRetryExceeded(t *testing.T, e Env) {
	if e.InjectQPError == nil {
		t.Skip("provider has no QP error injection")
	}
	p := connect(t, e, pairConfig{})
	mc := p.c.reg(p.mem.alloc(4096), verbs.AccessLocalWrite)
	if err := e.InjectQPError(p.s.qp); err != nil {
		t.Fatalf("InjectQPError: %v", err)
	}
	p.c.postSend(
		verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(mc, 0, 8)}},
		verbs.SendWR{ID: 3, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{sge(mc, 0, 8)}},
	)
	wcs, done := waitWCOrDone(t, p.ctx, p.c.scq, p.c.id, 2)
	if done {
		t.Fatalf("connection closed after the peer QP error (completions %+v)", wcs)
	}
	expectStatus(t, wcs, st(2, verbs.WCRetryExcErr), flushed(3))
}
