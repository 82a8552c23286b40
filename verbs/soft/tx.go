package soft

import (
	"github.com/rdmablk/rdmablk/verbs"
)

// txAction is what the tx engine writes next, decided under q.mu and carried
// out without it.
type txAction struct {
	kind uint8
	h    header
	segs [][]byte      // WR payload (requester)
	data []byte        // READ response payload (responder)
	mr   *memoryRegion // released once the READ response is written
	slot uint64        // send-queue slot being transmitted
}

const (
	txIdle uint8 = iota // nothing to do: flush and wait for the bell
	txExit              // link down: stop
	txDisc              // send DISC, half-close, stop
	txResp              // send a responder item (ACK, NAK, READ response)
	txWR                // transmit a send-queue WR
)

// txLoop is the tx engine: it writes responder items first (ACKs, NAKs, READ
// responses, in the order the rx engine queued them), then send-queue WRs
// in posting order, honouring ORD, fences and RNR waits. Frames are buffered
// and flushed when there is nothing more to send.
func (q *qp) txLoop() {
	defer q.engineDone()
	var a txAction
	for {
		q.mu.Lock()
		q.finishTxLocked(&a)
		q.nextTxLocked(&a)
		q.mu.Unlock()

		var err error
		switch a.kind {
		case txIdle:
			if err = q.fw.flush(); err == nil {
				<-q.bell
				continue
			}
		case txExit:
			q.fw.flush()
			return
		case txDisc:
			if err = q.fw.frame(&header{typ: frameDisc}); err == nil {
				err = q.fw.flush()
			}
			closeWrite(q.conn)
			if err == nil {
				return
			}
		case txResp:
			err = q.fw.frame(&a.h, a.data)
			if a.mr != nil {
				a.mr.release()
				a.mr = nil
			}
		case txWR:
			if a.h.typ == frameReadReq {
				err = q.fw.frame(&a.h)
			} else {
				err = q.fw.segs(&a.h, a.segs)
			}
		}
		if err != nil {
			q.mu.Lock()
			q.finishTxLocked(&a)
			q.mu.Unlock()
			q.linkFailed(err)
			return
		}
	}
}

// finishTxLocked applies the bookkeeping of the action just written.
func (q *qp) finishTxLocked(a *txAction) {
	switch a.kind {
	case txWR:
		q.txBusy = noSlot
		q.advanceLocked()
		if q.state == qpError {
			q.flushLocked()
		}
	}
	*a = txAction{}
}

// nextTxLocked picks the next action.
func (q *qp) nextTxLocked(a *txAction) {
	if q.respLen > 0 {
		it := &q.resp[q.respHead]
		a.kind = txResp
		switch it.kind {
		case respAck:
			a.h = header{typ: frameAck, msn: it.msn}
		case respNak:
			a.h = header{typ: frameNak, msn: it.msn, syn: it.syn}
		case respRead:
			a.h = header{typ: frameReadResp, msn: it.msn, length: uint32(len(it.data))}
			a.data, a.mr = it.data, it.mr
			// The responder resource is free once the response starts:
			// the requester cannot see it complete (and issue another
			// READ) before this point.
			q.readsPending--
		}
		*it = respItem{}
		q.respHead++
		if q.respHead == len(q.resp) {
			q.respHead = 0
		}
		q.respLen--
		return
	}
	switch q.link {
	case linkClosing:
		if q.discPending {
			q.discPending = false
			a.kind = txDisc
		} else {
			a.kind = txExit
		}
		return
	case linkDown, linkNone:
		a.kind = txExit
		return
	}
	a.kind = txIdle
	if q.state == qpRTS && !q.rnrWait && !q.localErr && q.sqNext < q.sqTail {
		i := q.sqNext
		s := q.slot(i)
		isRead := s.op == verbs.OpRDMARead
		if isRead && q.ord == 0 && !s.failed {
			// No READ may ever be outstanding: fail fast rather than stall.
			s.failed, s.status = true, verbs.WCLocQPOpErr
		}
		if s.failed {
			// The WR failed its local checks: it completes with its error
			// once every earlier WR has completed.
			q.sqNext++
			q.sentHigh = max(q.sentHigh, q.sqNext)
			q.localErr = true
			q.advanceLocked()
			return
		}
		if isRead && q.readsOut >= q.ord {
			return
		}
		if s.fence && q.readsOut > 0 {
			return
		}
		q.txBusy = i
		q.sqNext++
		q.sentHigh = max(q.sentHigh, q.sqNext)
		a.kind = txWR
		a.slot = i
		msn := uint32(i)
		switch s.op {
		case verbs.OpRDMARead:
			q.readsOut++
			q.readsHigh = max(q.readsHigh, q.readsOut)
			a.h = header{typ: frameReadReq, msn: msn, rkey: s.rkey, raddr: s.raddr, imm: s.length}
		case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
			a.h = header{typ: frameWrite, msn: msn, length: s.length, rkey: s.rkey, raddr: s.raddr}
			if s.op == verbs.OpRDMAWriteWithImm {
				a.h.flags, a.h.imm = flagImm, s.imm
			}
			a.segs = s.segs
		default:
			a.h = header{typ: frameSend, msn: msn, length: s.length}
			switch s.op {
			case verbs.OpSendWithImm:
				a.h.flags, a.h.imm = flagImm, s.imm
			case verbs.OpSendWithInv:
				a.h.flags, a.h.imm = flagInv, s.imm
			}
			if s.solicit {
				a.h.flags |= flagSolicited
			}
			a.segs = s.segs
		}
		return
	}
}
