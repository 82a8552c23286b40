package soft

import (
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// rxBatch is how many frames the rx engine handles before waking the tx
// engine even if more input is buffered.
const rxBatch = 16

// rxLoop is the rx engine: it reads frames and executes them. As responder
// it runs the peer's requests against local memory (SEND into the next
// receive, WRITE into an MR, READ from an MR) with no help from the
// application; as requester it applies ACKs, NAKs and READ responses to the
// send queue. Payloads are read straight into their destination.
func (q *qp) rxLoop() {
	defer q.engineDone()
	var h header
	n := 0
	for {
		if n > 0 && (n >= rxBatch || !q.fr.pending()) {
			q.ring()
			n = 0
		}
		if err := q.fr.next(&h); err != nil {
			q.linkFailed(err)
			return
		}
		n++
		var err error
		switch h.typ {
		case frameSend, frameWrite, frameReadReq:
			err = q.onRequest(&h)
		case frameAck:
			err = q.onAck(&h)
		case frameNak:
			err = q.onNak(&h)
		case frameReadResp:
			err = q.onReadResp(&h)
		case frameDisc:
			q.onDisc()
			return
		default:
			err = fmt.Errorf("%w: CM frame %d on an established link", errProtocol, h.typ)
		}
		if err != nil {
			q.linkFailed(err)
			return
		}
	}
}

var errRespOverflow = fmt.Errorf("%w: responder queue overflow", errProtocol)

// pushRespLocked queues a responder item for the tx engine.
func (q *qp) pushRespLocked(it respItem) bool {
	if q.respLen == len(q.resp) {
		return false
	}
	i := q.respHead + q.respLen
	if i >= len(q.resp) {
		i -= len(q.resp)
	}
	q.resp[i] = it
	q.respLen++
	return true
}

// dropRespLocked empties the responder queue, releasing the MR each
// queued READ response holds. For when nothing will send them: the
// engines have exited, or the QP is destroyed.
func (q *qp) dropRespLocked() {
	for q.respLen > 0 {
		it := &q.resp[q.respHead]
		if it.mr != nil {
			it.mr.release()
		}
		*it = respItem{}
		q.respHead = (q.respHead + 1) % len(q.resp)
		q.respLen--
	}
}

// ackLocked acknowledges msn, coalescing with a queued ACK.
func (q *qp) ackLocked(msn uint32) bool {
	if q.respLen > 0 {
		i := q.respHead + q.respLen - 1
		if i >= len(q.resp) {
			i -= len(q.resp)
		}
		if q.resp[i].kind == respAck {
			q.resp[i].msn = msn
			return true
		}
	}
	return q.pushRespLocked(respItem{kind: respAck, msn: msn})
}

// nakErrorLocked sends a fatal NAK for msn and moves the QP to the error
// state (both QPs of the connection end up in error).
func (q *qp) nakErrorLocked(syn uint8, msn uint32) bool {
	q.nakSent = true
	ok := q.pushRespLocked(respItem{kind: respNak, syn: syn, msn: msn})
	q.enterErrorLocked()
	return ok
}

// deadLocked answers a request reaching a QP in the error state. Real
// hardware drops it and the requester's transport retries run out; the soft
// NIC says so at once with one NAK, so the requester's WR completes with
// WCRetryExcErr without the timeout.
func (q *qp) deadLocked(msn uint32) bool {
	if q.nakSent || q.link != linkUp {
		return true
	}
	q.nakSent = true
	return q.pushRespLocked(respItem{kind: respNak, syn: synDead, msn: msn})
}

// onRequest executes a SEND, WRITE or READ request from the peer. Naming in
// this file: a …Locked function is called with q.mu held and returns with
// it still held; an …Unlock function is called with q.mu held and returns
// with it released.
func (q *qp) onRequest(h *header) error {
	q.mu.Lock()
	if q.state != qpRTS || q.link != linkUp {
		ok := q.deadLocked(h.msn)
		q.mu.Unlock()
		if !ok {
			return errRespOverflow
		}
		return q.fr.discard(h.length)
	}
	if h.msn != q.expect {
		drop, want := q.nakDrop, q.expect
		q.mu.Unlock()
		if drop {
			return q.fr.discard(h.length)
		}
		return fmt.Errorf("%w: request msn %d, expected %d", errProtocol, h.msn, want)
	}
	q.nakDrop = false
	switch h.typ {
	case frameSend:
		return q.onSendUnlock(h)
	case frameWrite:
		return q.onWriteUnlock(h)
	default:
		return q.onReadReqUnlock(h)
	}
}

// rnrUnlock answers a request that needs a receive when none is posted:
// RNR NAK, then drop requests until the requester retransmits this one.
// Called with q.mu held; returns with it released.
func (q *qp) rnrUnlock(h *header) error {
	q.nakDrop = true
	q.rnrNaksSent++
	ok := q.pushRespLocked(respItem{kind: respNak, syn: synRNR, msn: h.msn})
	q.mu.Unlock()
	if !ok {
		return errRespOverflow
	}
	return q.fr.discard(h.length)
}

// failRecvUnlock completes the head receive with st, NAKs the request with
// syn and moves the QP to the error state. Called with q.mu held; it
// releases it and, unless the payload was consumed already, discards it.
func (q *qp) failRecvUnlock(h *header, st verbs.WCStatus, syn uint8, consumed bool) error {
	q.recvWCLocked(q.rslot(q.rqHead), st)
	ok := q.nakErrorLocked(syn, h.msn)
	q.mu.Unlock()
	if !ok {
		return errRespOverflow
	}
	if consumed {
		return nil
	}
	return q.fr.discard(h.length)
}

// onSendUnlock lands a SEND in the next receive. Called with q.mu held; it
// releases it while the payload is read into the receive's memory, takes
// it again to complete the receive, and returns with it released.
func (q *qp) onSendUnlock(h *header) error {
	if q.rqHead == q.rqTail {
		return q.rnrUnlock(h)
	}
	r := q.rslot(q.rqHead)
	if r.status != verbs.WCSuccess {
		return q.failRecvUnlock(h, r.status, synRemOp, false)
	}
	if uint64(h.length) > r.total {
		return q.failRecvUnlock(h, verbs.WCLocLenErr, synInvReq, false)
	}
	q.rqBusy = true
	q.mu.Unlock()

	err := q.fr.scatter(r.segs, h.length)

	q.mu.Lock()
	q.rqBusy = false
	if err != nil {
		q.mu.Unlock()
		return err
	}
	if q.state != qpRTS {
		q.flushLocked()
		ok := q.deadLocked(h.msn)
		q.mu.Unlock()
		if !ok {
			return errRespOverflow
		}
		return nil
	}
	wc := verbs.WorkCompletion{ID: r.id, Opcode: verbs.WCRecv, ByteLen: h.length, QPNum: q.num}
	switch {
	case h.flags&flagImm != 0:
		wc.Flags, wc.Imm = verbs.WCWithImm, h.imm
	case h.flags&flagInv != 0:
		if !q.dev.invalidate(h.imm, q.pd) {
			// As rxe: the receive completes with "remote invalid
			// request" and the QP moves to the error state.
			return q.failRecvUnlock(h, verbs.WCRemInvReqErr, synInvReq, true)
		}
		wc.Flags, wc.InvalidatedRKey = verbs.WCWithInv, h.imm
	}
	q.recvDoneLocked(&wc)
	q.expect++
	ok := q.ackLocked(h.msn)
	q.mu.Unlock()
	if !ok {
		return errRespOverflow
	}
	return nil
}

// onWriteUnlock lands an RDMA WRITE (with immediate: also consumes a
// receive). Called with q.mu held; returns with it released (it is not
// held while the payload is read into the MR).
func (q *qp) onWriteUnlock(h *header) error {
	imm := h.flags&flagImm != 0
	var r *recvSlot
	if imm {
		if q.rqHead == q.rqTail {
			return q.rnrUnlock(h)
		}
		r = q.rslot(q.rqHead)
		if r.status != verbs.WCSuccess {
			return q.failRecvUnlock(h, r.status, synRemOp, false)
		}
		q.rqBusy = true
	}
	q.mu.Unlock()

	if h.length > 0 {
		mr, data, ok := q.dev.remote(h.rkey, h.raddr, h.length, verbs.AccessRemoteWrite, q.pd)
		if !ok {
			q.mu.Lock()
			q.rqBusy = false
			ok := q.nakErrorLocked(synRemAccess, h.msn)
			q.mu.Unlock()
			if !ok {
				return errRespOverflow
			}
			return q.fr.discard(h.length)
		}
		err := q.fr.full(data)
		mr.release()
		if err != nil {
			q.mu.Lock()
			q.rqBusy = false
			q.mu.Unlock()
			return err
		}
	}

	q.mu.Lock()
	q.rqBusy = false
	if q.state != qpRTS {
		q.flushLocked()
		ok := q.deadLocked(h.msn)
		q.mu.Unlock()
		if !ok {
			return errRespOverflow
		}
		return nil
	}
	if imm {
		wc := verbs.WorkCompletion{ID: r.id, Opcode: verbs.WCRecvRDMAWithImm, Flags: verbs.WCWithImm,
			ByteLen: h.length, Imm: h.imm, QPNum: q.num}
		q.recvDoneLocked(&wc)
	}
	q.expect++
	ok := q.ackLocked(h.msn)
	q.mu.Unlock()
	if !ok {
		return errRespOverflow
	}
	return nil
}

// onReadReqUnlock checks an RDMA READ request and queues its response.
// Called with q.mu held; returns with it released.
func (q *qp) onReadReqUnlock(h *header) error {
	q.mu.Unlock()
	var mr *memoryRegion
	var data []byte
	if h.imm > 0 {
		var ok bool
		mr, data, ok = q.dev.remote(h.rkey, h.raddr, h.imm, verbs.AccessRemoteRead, q.pd)
		if !ok {
			q.mu.Lock()
			ok := q.nakErrorLocked(synRemAccess, h.msn)
			q.mu.Unlock()
			if !ok {
				return errRespOverflow
			}
			return nil
		}
	}
	q.mu.Lock()
	var ok bool
	switch {
	case q.state != qpRTS:
		ok = q.deadLocked(h.msn)
	case q.readsPending >= q.ird:
		// More READs than the responder resources negotiated: the
		// requester broke its ORD.
		ok = q.nakErrorLocked(synInvReq, h.msn)
	default:
		q.readsPending++
		q.expect++
		ok = q.pushRespLocked(respItem{kind: respRead, msn: h.msn, data: data, mr: mr})
		if ok {
			mr = nil
		}
	}
	q.mu.Unlock()
	if mr != nil {
		mr.release()
	}
	if !ok {
		return errRespOverflow
	}
	return nil
}

// onAck applies a cumulative ACK.
func (q *qp) onAck(h *header) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != qpRTS || q.link != linkUp {
		return nil
	}
	idx, rel := q.sqIndexLocked(h.msn)
	switch rel {
	case -1:
		return nil
	case 1:
		return fmt.Errorf("%w: ACK of msn %d never sent", errProtocol, h.msn)
	}
	if idx+1 > q.ackTo {
		q.ackTo = idx + 1
		q.rnrCount = 0
	}
	q.advanceLocked()
	return nil
}

// onNak applies a NAK: it acknowledges every earlier WR, then either
// schedules an RNR retry or fails the WR.
func (q *qp) onNak(h *header) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.state != qpRTS || q.link != linkUp {
		return nil
	}
	idx, rel := q.sqIndexLocked(h.msn)
	if rel != 0 {
		return fmt.Errorf("%w: NAK of msn %d outside the send window", errProtocol, h.msn)
	}
	if idx > q.ackTo {
		q.ackTo = idx
	}
	s := q.slot(idx)
	var st verbs.WCStatus
	switch h.syn {
	case synRNR:
		q.rnrNaksRecv++
		q.kickLocked()
		if s.op != verbs.OpSend && s.op != verbs.OpSendWithImm && s.op != verbs.OpSendWithInv &&
			s.op != verbs.OpRDMAWriteWithImm {
			return fmt.Errorf("%w: RNR NAK for a request without a receive", errProtocol)
		}
		if q.rnrRetry < 7 && q.rnrCount >= q.rnrRetry {
			st = verbs.WCRNRRetryExcErr
			break
		}
		q.rnrCount++
		// Go back: retransmit from the NAKed WR once the timer fires.
		q.sqNext = idx
		q.localErr = false
		q.readsOut = 0
		for i := q.sqAck; i < idx; i++ {
			if t := q.slot(i); t.op == verbs.OpRDMARead && !t.landed {
				q.readsOut++
			}
		}
		q.rnrWait = true
		q.rnrTimer.Reset(rnrDelay(q.rnrCount))
		q.advanceLocked()
		return nil
	case synRemAccess:
		st = verbs.WCRemAccessErr
	case synInvReq:
		st = verbs.WCRemInvReqErr
	case synRemOp:
		st = verbs.WCRemOpErr
	default: // synDead
		st = verbs.WCRetryExcErr
	}
	s.failed, s.status = true, st
	q.advanceLocked()
	return nil
}

// onReadResp lands READ response data in the READ's local SGL.
func (q *qp) onReadResp(h *header) error {
	q.mu.Lock()
	if q.state != qpRTS || q.link != linkUp {
		q.mu.Unlock()
		return q.fr.discard(h.length)
	}
	idx, rel := q.sqIndexLocked(h.msn)
	var s *sendSlot
	if rel == 0 {
		s = q.slot(idx)
	}
	if s == nil || s.op != verbs.OpRDMARead || s.landed || s.failed || h.length != s.length {
		q.mu.Unlock()
		return fmt.Errorf("%w: unexpected READ response msn %d", errProtocol, h.msn)
	}
	q.rxBusy = idx
	q.mu.Unlock()

	err := q.fr.scatter(s.segs, h.length)

	q.mu.Lock()
	defer q.mu.Unlock()
	q.rxBusy = noSlot
	if err != nil {
		return err
	}
	if q.state != qpRTS {
		q.flushLocked()
		return nil
	}
	s.landed = true
	q.readsOut--
	if idx+1 > q.ackTo {
		q.ackTo = idx + 1
		q.rnrCount = 0
	}
	q.advanceLocked()
	return nil
}
