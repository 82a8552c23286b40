//go:build ibverbs

package ibverbs

/*
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// PostSend checks each work request against the QP's limits (so the error
// names the first one refused, like bad_wr), encodes up to one batch into
// the QP's C scratch and posts the batch with one cgo call.
func (q *queuePair) PostSend(wrs []verbs.SendWR) (int, error) {
	q.sendMu.Lock()
	defer q.sendMu.Unlock()
	if q.qp == nil {
		return 0, verbs.ErrClosed
	}
	if q.state.Load() == qpInit {
		return 0, fmt.Errorf("%w: send before the connection is established", verbs.ErrQPState)
	}
	posted := 0
	for posted < len(wrs) {
		n, sg := 0, 0
		var bad error
		room := q.sq.free()
		for n < batch && posted+n < len(wrs) {
			wr := &wrs[posted+n]
			if bad = q.checkSend(wr); bad != nil {
				break
			}
			if n == room {
				bad = fmt.Errorf("%w: send queue of %d", verbs.ErrQueueFull, q.cap.MaxSendWR)
				break
			}
			s := &q.swr[n]
			s.id = C.uint64_t(wr.ID)
			s.raddr = C.uint64_t(wr.RemoteAddr)
			s.rkey = C.uint32_t(wr.RKey)
			s.imm = C.uint32_t(wr.Imm)
			if wr.Opcode == verbs.OpSendWithInv {
				s.imm = C.uint32_t(wr.InvalidateRKey)
			}
			s.sge_off = C.uint32_t(sg)
			s.nsge = C.uint16_t(len(wr.SGL))
			s.opcode = C.uint8_t(wr.Opcode)
			s.flags = C.uint8_t(wr.Flags)
			sg += copy(q.ssge[sg:], wr.SGL)
			n++
		}
		if n > 0 {
			r := C.rb_post_send(q.qp, &q.swr[0], (*C.struct_ibv_sge)(unsafe.Pointer(&q.ssge[0])), q.sscr, C.int(n))
			done, e := r&0xffff, r>>16
			q.sq.pushSend(wrs[posted : posted+int(done)])
			posted += int(done)
			if e != 0 {
				return posted, postErr("ibv_post_send", e)
			}
		}
		if bad != nil {
			return posted, bad
		}
	}
	return posted, nil
}

func (q *queuePair) checkSend(wr *verbs.SendWR) error {
	switch wr.Opcode {
	case verbs.OpSend, verbs.OpSendWithImm, verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
	case verbs.OpRDMARead:
		if len(wr.SGL) > q.maxSGERd {
			return fmt.Errorf("%w: RDMA READ with %d SGEs (max_sge_rd %d)", verbs.ErrInvalid, len(wr.SGL), q.maxSGERd)
		}
	case verbs.OpSendWithInv:
		if !q.sendInv {
			return fmt.Errorf("%w: SEND_WITH_INV", verbs.ErrNotSupported)
		}
	default:
		return fmt.Errorf("%w: opcode %#x", verbs.ErrInvalid, wr.Opcode)
	}
	if len(wr.SGL) > q.cap.MaxSendSGE {
		return fmt.Errorf("%w: %d SGEs (QP max %d)", verbs.ErrInvalid, len(wr.SGL), q.cap.MaxSendSGE)
	}
	if wr.Flags&verbs.SendInline != 0 {
		if q.cap.MaxInlineData == 0 {
			return fmt.Errorf("%w: inline data", verbs.ErrNotSupported)
		}
		total := 0
		for _, s := range wr.SGL {
			total += int(s.Length)
		}
		if total > q.cap.MaxInlineData {
			return fmt.Errorf("%w: %d bytes inline (QP max %d)", verbs.ErrInvalid, total, q.cap.MaxInlineData)
		}
	}
	return nil
}

// PostRecv posts receive work requests in batches, like PostSend.
func (q *queuePair) PostRecv(wrs []verbs.RecvWR) (int, error) {
	q.recvMu.Lock()
	defer q.recvMu.Unlock()
	if q.qp == nil {
		return 0, verbs.ErrClosed
	}
	posted := 0
	for posted < len(wrs) {
		n, sg := 0, 0
		var bad error
		room := q.rq.free()
		for n < batch && posted+n < len(wrs) {
			wr := &wrs[posted+n]
			if len(wr.SGL) > q.cap.MaxRecvSGE {
				bad = fmt.Errorf("%w: %d receive SGEs (QP max %d)", verbs.ErrInvalid, len(wr.SGL), q.cap.MaxRecvSGE)
				break
			}
			if n == room {
				bad = fmt.Errorf("%w: receive queue of %d", verbs.ErrQueueFull, q.cap.MaxRecvWR)
				break
			}
			r := &q.rwr[n]
			r.id = C.uint64_t(wr.ID)
			r.sge_off = C.uint32_t(sg)
			r.nsge = C.uint16_t(len(wr.SGL))
			sg += copy(q.rsge[sg:], wr.SGL)
			n++
		}
		if n > 0 {
			r := C.rb_post_recv(q.qp, &q.rwr[0], (*C.struct_ibv_sge)(unsafe.Pointer(&q.rsge[0])), q.rscr, C.int(n))
			done, e := r&0xffff, r>>16
			q.rq.pushRecv(wrs[posted : posted+int(done)])
			posted += int(done)
			if e != 0 {
				return posted, postErr("ibv_post_recv", e)
			}
		}
		if bad != nil {
			return posted, bad
		}
	}
	return posted, nil
}

// postErr maps the return of ibv_post_send / ibv_post_recv.
func postErr(what string, e C.int) error {
	switch syscall.Errno(e) {
	case syscall.ENOMEM:
		return fmt.Errorf("%w: %s", verbs.ErrQueueFull, what)
	case syscall.EINVAL:
		return fmt.Errorf("%w: %s: %w", verbs.ErrInvalid, what, syscall.Errno(e))
	}
	return errnoErr(what, e)
}
