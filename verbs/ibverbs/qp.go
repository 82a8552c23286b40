//go:build ibverbs

package ibverbs

/*
#include <stdlib.h>
#include "rb.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// QP states as this package tracks them (the hardware state machine is
// richer; these are the ones that change what a post may do).
const (
	qpInit      int32 = iota // created, not connected: receives only
	qpConnected              // RTS: everything
	qpError                  // error / disconnected: posts accepted, they flush
	qpClosed
)

// queuePair is an RC ibv_qp created on a CM ID (rdma_create_qp). Each work
// queue has scratch memory in C (compact WRs, SGEs, ibv_*_wr) sized for
// one batch; its mutex makes concurrent posters safe, though one owner
// goroutine per queue is the intended use.
type queuePair struct {
	id       *connID
	qp       *C.struct_ibv_qp
	pd       *protectionDomain
	scq, rcq *cq
	cap      verbs.QPCap
	num      uint32
	maxSGERd int
	sendInv  bool
	state    atomic.Int32
	sq, rq   *wqRing // see account.go

	sendMu  sync.Mutex // guards the send scratch
	swr     []C.struct_rb_swr
	ssge    []verbs.SGE // views of C memory
	sscr    *C.struct_ibv_send_wr
	recvMu  sync.Mutex // guards the receive scratch
	rwr     []C.struct_rb_rwr
	rsge    []verbs.SGE
	rscr    *C.struct_ibv_recv_wr
	scratch []unsafe.Pointer // C allocations, freed by destroy
}

func (q *queuePair) calloc(n, size int) unsafe.Pointer {
	p := C.calloc(C.size_t(n), C.size_t(size))
	if p == nil {
		panic("ibverbs: out of C memory")
	}
	q.scratch = append(q.scratch, p)
	return p
}

func (q *queuePair) allocScratch() {
	ns, nr := max(q.cap.MaxSendSGE, 1), max(q.cap.MaxRecvSGE, 1)
	q.swr = unsafe.Slice((*C.struct_rb_swr)(q.calloc(batch, C.sizeof_struct_rb_swr)), batch)
	q.ssge = unsafe.Slice((*verbs.SGE)(q.calloc(batch*ns, C.sizeof_struct_ibv_sge)), batch*ns)
	q.sscr = (*C.struct_ibv_send_wr)(q.calloc(batch, C.sizeof_struct_ibv_send_wr))
	q.rwr = unsafe.Slice((*C.struct_rb_rwr)(q.calloc(batch, C.sizeof_struct_rb_rwr)), batch)
	q.rsge = unsafe.Slice((*verbs.SGE)(q.calloc(batch*nr, C.sizeof_struct_ibv_sge)), batch*nr)
	q.rscr = (*C.struct_ibv_recv_wr)(q.calloc(batch, C.sizeof_struct_ibv_recv_wr))
}

func (q *queuePair) Num() uint32      { return q.num }
func (q *queuePair) Cap() verbs.QPCap { return q.cap }

// toError moves the QP to the error state: outstanding and future work
// requests complete with WCWRFlushErr.
func (q *queuePair) toError() {
	for {
		s := q.state.Load()
		if s == qpClosed || s == qpError {
			return
		}
		if q.state.CompareAndSwap(s, qpError) {
			break
		}
	}
	q.sendMu.Lock()
	if q.qp != nil {
		C.rb_qp_to_error(q.qp)
	}
	q.sendMu.Unlock()
}

// InjectQPError moves qp (created by this provider) to the error state, as
// an asynchronous fatal QP error would: the verbstest hook.
func InjectQPError(qp verbs.QueuePair) error {
	q, ok := qp.(*queuePair)
	if !ok {
		return fmt.Errorf("%w: not an ibverbs QP", verbs.ErrInvalid)
	}
	if q.state.Load() == qpClosed {
		return verbs.ErrClosed
	}
	q.toError()
	return nil
}

func (q *queuePair) Close() error { return q.id.destroyQP(q) }

// destroy destroys the QP through its CM ID (rdma_destroy_qp) with both
// work queues locked, so no post runs on a destroyed QP, and frees what
// the QP held.
func (q *queuePair) destroy(cmID *C.struct_rdma_cm_id) {
	q.state.Store(qpClosed)
	q.sendMu.Lock()
	q.recvMu.Lock()
	C.rdma_destroy_qp(cmID)
	q.qp = nil
	for _, p := range q.scratch {
		C.free(p)
	}
	q.scratch = nil
	q.swr, q.ssge, q.rwr, q.rsge, q.sscr, q.rscr = nil, nil, nil, nil, nil, nil
	q.recvMu.Unlock()
	q.sendMu.Unlock()
	q.scq.detach(q)
	if q.rcq != q.scq {
		q.rcq.detach(q)
	}
	q.pd.release()
}
