package soft

import (
	"fmt"

	"github.com/rdmablk/rdmablk/verbs"
)

// PostSend posts send work requests under one lock and wakes the tx engine
// once. Errors returned here (the WR and those after it are not posted)
// are the ones ibv_post_send reports synchronously: ErrInvalid (too many
// SGEs, unknown opcode, inline data too long or not in registered memory),
// ErrNotSupported (SEND_WITH_INV or inline data the profile lacks),
// ErrQueueFull, ErrQPState (not connected yet), ErrClosed. Checks of the
// local SGEs (lkey, PD, bounds, local write) happen as on hardware: the
// WR is accepted and completes with WCLocProtErr / WCLocLenErr when the
// send queue reaches it, moving the QP to the error state. Posting to a QP
// in the error state is accepted; the WRs complete with WCWRFlushErr.
//
// Posters of one QP are serialized by sendPostMu, which no engine takes.
// The WRs are validated and written into the free slots past sqTail (which
// only posters touch) without q.mu; q.mu is held only to check the state
// and publish the new tail, so the engines are never held up by a post.
func (q *qp) PostSend(wrs []verbs.SendWR) (int, error) {
	q.sendPostMu.Lock()
	defer q.sendPostMu.Unlock()
	keys := q.dev.keys.Load()
	tail := q.sqTail // written only with sendPostMu held
	n := 0
	var err error
	for i := range wrs {
		if err = q.fillSend(&wrs[i], tail, keys); err != nil {
			break
		}
		tail++
		n++
	}
	q.mu.Lock()
	switch {
	case q.closed:
		q.mu.Unlock()
		return 0, fmt.Errorf("%w: queue pair", verbs.ErrClosed)
	case q.state == qpInit:
		q.mu.Unlock()
		return 0, fmt.Errorf("%w: QP %#x is not connected", verbs.ErrQPState, q.num)
	}
	q.sqTail = tail
	if n > 0 && q.state == qpError {
		q.flushLocked()
	}
	q.mu.Unlock()
	if n > 0 {
		q.ring()
	}
	return n, err
}

// fillSend validates wr and writes it into the slot of index tail, which no
// engine reads before the tail is published. Called with sendPostMu held.
func (q *qp) fillSend(wr *verbs.SendWR, tail uint64, keys *keyTable) error {
	attr := &q.dev.attr
	isRead := false
	switch wr.Opcode {
	case verbs.OpSend, verbs.OpSendWithImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
	case verbs.OpRDMARead:
		isRead = true
	case verbs.OpSendWithInv:
		if !attr.Caps.Has(verbs.CapSendWithInv) {
			return fmt.Errorf("%w: SEND_WITH_INV on %s", verbs.ErrNotSupported, q.dev.name)
		}
	default:
		return fmt.Errorf("%w: opcode %d", verbs.ErrInvalid, wr.Opcode)
	}
	nsge := len(wr.SGL)
	if nsge > q.cap.MaxSendSGE {
		return fmt.Errorf("%w: %d SGEs, QP allows %d", verbs.ErrInvalid, nsge, q.cap.MaxSendSGE)
	}
	if isRead && nsge > attr.MaxSGERd {
		return fmt.Errorf("%w: %d SGEs in RDMA READ, device allows %d", verbs.ErrInvalid, nsge, attr.MaxSGERd)
	}
	if wr.Flags&^(verbs.SendFence|verbs.SendSignaled|verbs.SendSolicited|verbs.SendInline) != 0 {
		return fmt.Errorf("%w: send flags %#x", verbs.ErrInvalid, uint8(wr.Flags))
	}
	inline := wr.Flags&verbs.SendInline != 0
	if inline {
		if attr.MaxInlineData == 0 {
			return fmt.Errorf("%w: inline data on %s", verbs.ErrNotSupported, q.dev.name)
		}
		if isRead {
			return fmt.Errorf("%w: inline RDMA READ", verbs.ErrInvalid)
		}
	}
	if tail-q.sqFreed.Load() >= uint64(len(q.sq)) {
		return fmt.Errorf("%w: %d send WRs outstanding", verbs.ErrQueueFull, len(q.sq))
	}
	pos := int(tail % uint64(len(q.sq)))
	base := pos * q.cap.MaxSendSGE
	s := q.slot(tail)
	*s = sendSlot{
		id:       wr.ID,
		op:       wr.Opcode,
		signaled: q.sigAll || wr.Flags&verbs.SendSignaled != 0,
		fence:    wr.Flags&verbs.SendFence != 0,
		solicit:  wr.Flags&verbs.SendSolicited != 0,
		raddr:    wr.RemoteAddr,
		rkey:     wr.RKey,
	}
	switch wr.Opcode {
	case verbs.OpSendWithImm, verbs.OpRDMAWriteWithImm:
		s.imm = wr.Imm
	case verbs.OpSendWithInv:
		s.imm = wr.InvalidateRKey
	}
	if inline {
		return q.fillInline(s, wr, pos, base, keys)
	}
	var total uint64
	segs := q.sqSegs[base : base+nsge]
	for j := range wr.SGL {
		seg, st := q.localSeg(keys, wr.SGL[j], isRead)
		if st != verbs.WCSuccess && !s.failed {
			s.failed, s.status = true, st
		}
		segs[j] = seg
		total += uint64(wr.SGL[j].Length)
	}
	if total > maxMessage && !s.failed {
		s.failed, s.status = true, verbs.WCLocLenErr
	}
	if s.failed {
		total = 0
		segs = segs[:0]
	}
	s.segs = segs
	s.length = uint32(total)
	return nil
}

// fillInline copies the data of an inline WR into the slot. The SGE
// addresses must lie in registered memory of this device (their lkeys are
// used only to find it; access rights are not checked, as for inline data
// on hardware).
func (q *qp) fillInline(s *sendSlot, wr *verbs.SendWR, pos, base int, keys *keyTable) error {
	var total uint64
	for _, sge := range wr.SGL {
		total += uint64(sge.Length)
	}
	if total > uint64(q.cap.MaxInlineData) {
		return fmt.Errorf("%w: %d bytes inline, QP allows %d", verbs.ErrInvalid, total, q.cap.MaxInlineData)
	}
	dst := q.inline[pos*q.cap.MaxInlineData : pos*q.cap.MaxInlineData+int(total)]
	off := 0
	for _, sge := range wr.SGL {
		if sge.Length == 0 {
			continue
		}
		mr := keys.lkeys[sge.LKey]
		if mr == nil {
			return fmt.Errorf("%w: inline SGE lkey %#x not registered", verbs.ErrInvalid, sge.LKey)
		}
		o, ok := mr.span(sge.Addr, uint64(sge.Length))
		if !ok {
			return fmt.Errorf("%w: inline SGE outside its MR", verbs.ErrInvalid)
		}
		off += copy(dst[off:], mr.buf[o:o+uint64(sge.Length)])
	}
	segs := q.sqSegs[base : base+1]
	segs[0] = dst
	s.segs = segs
	s.length = uint32(total)
	return nil
}

// localSeg resolves a local SGE through the key table snapshot keys: the
// lkey must name a live MR of the QP's PD, the span must lie inside it,
// and needWrite requires AccessLocalWrite. Failures are WCLocProtErr, as
// on hardware.
func (q *qp) localSeg(keys *keyTable, sge verbs.SGE, needWrite bool) ([]byte, verbs.WCStatus) {
	mr := keys.lkeys[sge.LKey]
	if mr == nil || mr.pd != q.pd || mr.closing.Load() {
		return nil, verbs.WCLocProtErr
	}
	if needWrite && mr.access&verbs.AccessLocalWrite == 0 {
		return nil, verbs.WCLocProtErr
	}
	off, ok := mr.span(sge.Addr, uint64(sge.Length))
	if !ok {
		return nil, verbs.WCLocProtErr
	}
	return mr.buf[off : off+uint64(sge.Length)], verbs.WCSuccess
}

// PostRecv posts receive work requests under one lock. Synchronous errors:
// ErrInvalid (too many SGEs), ErrQueueFull, ErrClosed. Receives may be
// posted before the connection is established. An SGE that fails its
// checks (lkey, PD, bounds, local write) is reported when a message lands
// in that receive: it completes with WCLocProtErr, the QP moves to the
// error state and the sender's WR completes with WCRemOpErr.
//
// As PostSend: posters are serialized by recvPostMu and fill the slots past
// rqTail without q.mu, which is held only to publish the new tail.
func (q *qp) PostRecv(wrs []verbs.RecvWR) (int, error) {
	q.recvPostMu.Lock()
	defer q.recvPostMu.Unlock()
	keys := q.dev.keys.Load()
	tail := q.rqTail // written only with recvPostMu held
	n := 0
	var err error
	for i := range wrs {
		wr := &wrs[i]
		if len(wr.SGL) > q.cap.MaxRecvSGE {
			err = fmt.Errorf("%w: %d SGEs, QP allows %d", verbs.ErrInvalid, len(wr.SGL), q.cap.MaxRecvSGE)
			break
		}
		if tail-q.rqFreed.Load() >= uint64(len(q.rq)) {
			err = fmt.Errorf("%w: %d receive WRs outstanding", verbs.ErrQueueFull, len(q.rq))
			break
		}
		pos := int(tail % uint64(len(q.rq)))
		segs := q.rqSegs[pos*q.cap.MaxRecvSGE : pos*q.cap.MaxRecvSGE+len(wr.SGL)]
		r := q.rslot(tail)
		*r = recvSlot{id: wr.ID}
		for j := range wr.SGL {
			seg, st := q.localSeg(keys, wr.SGL[j], true)
			if st != verbs.WCSuccess && r.status == verbs.WCSuccess {
				r.status = st
			}
			segs[j] = seg
			r.total += uint64(wr.SGL[j].Length)
		}
		r.segs = segs
		tail++
		n++
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, fmt.Errorf("%w: queue pair", verbs.ErrClosed)
	}
	q.rqTail = tail
	if n > 0 && q.state == qpError {
		q.flushLocked()
	}
	q.mu.Unlock()
	return n, err
}
