package soft

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// qpState is the verbs state of a QP as the application sees it.
type qpState uint8

const (
	qpInit  qpState = iota // created: receives may be posted, sends may not
	qpRTS                  // connected: both queues are processed
	qpError                // error: everything outstanding flushes, new WRs flush
)

// linkState is the state of the QP's transport connection.
type linkState uint8

const (
	linkNone    linkState = iota // not connected yet
	linkUp                       // engines running
	linkClosing                  // DISC queued or exchanged: engines winding down
	linkDown                     // failed or closed
)

// noSlot marks "no send-queue slot" in txBusy / rxBusy.
const noSlot = ^uint64(0)

// sendSlot is one send-queue entry: the work request as posted, its
// resolved local memory and its progress.
type sendSlot struct {
	id       uint64
	op       verbs.Opcode
	signaled bool
	fence    bool
	solicit  bool
	segs     [][]byte // resolved SGL (or the inline copy)
	length   uint32   // total bytes
	raddr    uint64
	rkey     uint32
	imm      uint32 // immediate data or rkey to invalidate
	failed   bool   // status holds the WR's final error
	status   verbs.WCStatus
	landed   bool // READ: response data has arrived
}

// recvSlot is one receive-queue entry.
type recvSlot struct {
	id     uint64
	segs   [][]byte
	total  uint64
	status verbs.WCStatus // WCLocProtErr when an SGE failed its checks
}

// Responder output items, sent by the tx engine in order.
const (
	respAck  uint8 = iota + 1 // cumulative ACK up to msn (coalesced)
	respRead                  // READ response carrying data
	respNak                   // NAK with syndrome
)

type respItem struct {
	kind uint8
	syn  uint8
	msn  uint32
	data []byte
	mr   *memoryRegion // acquired for a READ response until it is sent
}

// qp is a soft RC queue pair together with its soft NIC: the requester
// (send queue, tx engine) and responder (receive queue, rx engine) of one
// connection. Each connected QP runs two goroutines: txLoop writes frames,
// rxLoop reads them. Neither holds mu while doing I/O.
//
// Send-queue indices are absolute counters (slot = index mod depth):
//
//	sqFreed ≤ sqAck ≤ sqNext ≤ sqTail
//	[sqFreed, sqAck) completed, but no completion of it or a later WR polled
//	[sqAck, sqNext)  transmitted, awaiting ACK / READ data / error
//	[sqNext, sqTail) posted, not yet transmitted
//
// As in mlx5 and rxe, a slot is freed when the completion of its WR, or of a
// later WR of the same queue, is polled: an application that never signals
// fills the queue, and one whose CQ is as deep as its queues cannot overrun
// it. The receive queue works the same way with rqFreed. The message
// sequence number of the WR at index i is uint32(i).
type qp struct {
	dev    *device
	pd     *protectionDomain
	num    uint32
	cap    verbs.QPCap
	sendCQ *completionQueue
	recvCQ *completionQueue
	sigAll bool
	bell   chan struct{} // wakes the tx engine, capacity 1

	// Advanced by CompletionQueue.Poll (under the CQ's lock, in completion
	// order) when a completion of this QP is polled; read by the posters.
	sqFreed atomic.Uint64
	rqFreed atomic.Uint64

	// sendPostMu and recvPostMu serialize the posters of each queue (no
	// engine takes them): a poster fills the slots past sqTail / rqTail,
	// which nothing else reads, and publishes the new tail under mu. The
	// tails are written with both the post lock and mu held.
	sendPostMu sync.Mutex
	recvPostMu sync.Mutex

	mu     sync.Mutex // guards everything below
	state  qpState
	closed bool

	// requester
	sq        []sendSlot
	sqSegs    [][]byte
	inline    []byte
	sqAck     uint64
	sqNext    uint64
	sqTail    uint64
	ackTo     uint64 // every WR below this index is acknowledged
	sentHigh  uint64 // every WR below this index was reached by the tx engine (sent or failed locally)
	txBusy    uint64 // slot the tx engine is reading from, or noSlot
	rxBusy    uint64 // READ slot the rx engine is filling, or noSlot
	readsOut  int    // READs transmitted and not landed
	readsHigh int    // high-water mark of readsOut
	localErr  bool   // tx reached a WR that failed its local checks
	ord       int
	rnrRetry  uint8
	rnrCount  uint8
	rnrWait   bool
	rnrTimer  *time.Timer

	// responder
	rq           []recvSlot
	rqSegs       [][]byte
	rqHead       uint64
	rqTail       uint64
	rqBusy       bool // the rx engine is filling the head receive
	expect       uint32
	nakDrop      bool // after an RNR NAK: drop requests until expect comes again
	nakSent      bool // a fatal NAK went out: stay silent afterwards
	ird          int
	readsPending int
	resp         []respItem
	respHead     int
	respLen      int

	// link
	link        linkState
	conn        net.Conn
	fw          *frameWriter
	fr          *frameReader
	discPending bool
	engines     int
	engDone     chan struct{}
	linger      *time.Timer
	onDown      func(error)

	// statistics and test hooks
	rnrNaksRecv uint64
	rnrNaksSent uint64
	watch       chan struct{} // closed on notable events when a test waits
}

var _ verbs.QueuePair = (*qp)(nil)

// createQP validates attr against the device and builds the QP.
func (d *device) createQP(pdi verbs.ProtectionDomain, attr verbs.QPInitAttr) (*qp, error) {
	pd, ok := pdi.(*protectionDomain)
	if !ok || pd == nil || pd.dev != d {
		return nil, fmt.Errorf("%w: protection domain of another device", verbs.ErrInvalid)
	}
	scq, ok1 := attr.SendCQ.(*completionQueue)
	rcq, ok2 := attr.RecvCQ.(*completionQueue)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.dev != d || rcq.dev != d {
		return nil, fmt.Errorf("%w: completion queues must belong to device %s", verbs.ErrInvalid, d.name)
	}
	c := attr.Cap
	if c.MaxSendWR < 0 || c.MaxRecvWR < 0 || c.MaxSendSGE < 0 || c.MaxRecvSGE < 0 || c.MaxInlineData < 0 {
		return nil, fmt.Errorf("%w: negative QP capability", verbs.ErrInvalid)
	}
	if c.MaxSendWR > d.attr.MaxQPWR || c.MaxRecvWR > d.attr.MaxQPWR {
		return nil, fmt.Errorf("%w: QP depth %d/%d exceeds max_qp_wr %d", verbs.ErrInvalid, c.MaxSendWR, c.MaxRecvWR, d.attr.MaxQPWR)
	}
	if c.MaxSendSGE > d.attr.MaxSGE || c.MaxRecvSGE > d.attr.MaxSGE {
		return nil, fmt.Errorf("%w: %d/%d SGEs exceed max_sge %d", verbs.ErrInvalid, c.MaxSendSGE, c.MaxRecvSGE, d.attr.MaxSGE)
	}
	if c.MaxInlineData > d.attr.MaxInlineData {
		return nil, fmt.Errorf("%w: inline data %d exceeds device max %d", verbs.ErrInvalid, c.MaxInlineData, d.attr.MaxInlineData)
	}
	c.MaxSendSGE = max(c.MaxSendSGE, 1)
	c.MaxRecvSGE = max(c.MaxRecvSGE, 1)
	if err := d.reserve(&d.nQP, d.attr.MaxQP, "QP"); err != nil {
		return nil, err
	}
	if err := pd.use(); err != nil {
		d.release(&d.nQP)
		return nil, err
	}
	q := &qp{
		dev: d, pd: pd, cap: c, sendCQ: scq, recvCQ: rcq, sigAll: attr.SignalAll,
		bell:   make(chan struct{}, 1),
		sq:     make([]sendSlot, c.MaxSendWR),
		sqSegs: make([][]byte, c.MaxSendWR*c.MaxSendSGE),
		rq:     make([]recvSlot, c.MaxRecvWR),
		rqSegs: make([][]byte, c.MaxRecvWR*c.MaxRecvSGE),
		txBusy: noSlot, rxBusy: noSlot,
	}
	if c.MaxInlineData > 0 {
		q.inline = make([]byte, c.MaxSendWR*c.MaxInlineData)
	}
	if err := scq.attach(q); err != nil {
		pd.unuse()
		d.release(&d.nQP)
		return nil, err
	}
	if err := rcq.attach(q); err != nil {
		scq.detach(q)
		pd.unuse()
		d.release(&d.nQP)
		return nil, err
	}
	q.num = d.newQPN(q)
	return q, nil
}

func (q *qp) Num() uint32              { return q.num }
func (q *qp) Cap() verbs.QPCap         { return q.cap }
func (q *qp) slot(i uint64) *sendSlot  { return &q.sq[i%uint64(len(q.sq))] }
func (q *qp) rslot(i uint64) *recvSlot { return &q.rq[i%uint64(len(q.rq))] }

// ring wakes the tx engine (non-blocking; one pending wakeup is enough).
func (q *qp) ring() {
	select {
	case q.bell <- struct{}{}:
	default:
	}
}

// kickLocked wakes goroutines waiting in AwaitRNR and similar test hooks.
func (q *qp) kickLocked() {
	if q.watch != nil {
		close(q.watch)
		q.watch = nil
	}
}

func wcOpcode(op verbs.Opcode) verbs.WCOpcode {
	switch op {
	case verbs.OpRDMAWrite, verbs.OpRDMAWriteWithImm:
		return verbs.WCRDMAWrite
	case verbs.OpRDMARead:
		return verbs.WCRDMARead
	}
	return verbs.WCSend
}

// sendWCLocked generates the completion of the send WR at index i.
func (q *qp) sendWCLocked(s *sendSlot, i uint64, st verbs.WCStatus) {
	wc := verbs.WorkCompletion{ID: s.id, Status: st, Opcode: wcOpcode(s.op), ByteLen: s.length, QPNum: q.num}
	q.sendCQ.push(&wc, &q.sqFreed, i+1)
}

// recvWCLocked completes the head receive with an error or flush status and
// consumes it.
func (q *qp) recvWCLocked(r *recvSlot, st verbs.WCStatus) {
	wc := verbs.WorkCompletion{ID: r.id, Status: st, Opcode: verbs.WCRecv, QPNum: q.num}
	q.recvDoneLocked(&wc)
}

// recvDoneLocked consumes the head receive with completion wc.
func (q *qp) recvDoneLocked(wc *verbs.WorkCompletion) {
	q.rqHead++
	q.recvCQ.push(wc, &q.rqFreed, q.rqHead)
}

// sqIndexLocked maps a message sequence number to its send-queue index.
// rel is -1 for a WR already completed, 0 for one in [sqAck, sqNext), and
// 1 for one never transmitted (a protocol error from the peer).
func (q *qp) sqIndexLocked(msn uint32) (idx uint64, rel int) {
	d := msn - uint32(q.sqAck)
	if d >= 1<<31 {
		return 0, -1
	}
	idx = q.sqAck + uint64(d)
	if idx >= q.sqNext {
		return idx, 1
	}
	return idx, 0
}

// advanceLocked completes transmitted WRs in order: acknowledged ones
// succeed, a WR with a recorded error completes with it and moves the QP to
// the error state. It stops at a WR an engine is still using.
func (q *qp) advanceLocked() {
	for q.sqAck < q.sqNext {
		i := q.sqAck
		if i == q.txBusy || i == q.rxBusy {
			return
		}
		s := q.slot(i)
		if s.failed {
			q.sqAck++
			q.sendWCLocked(s, i, s.status)
			q.enterErrorLocked()
			return
		}
		if i >= q.ackTo || (s.op == verbs.OpRDMARead && !s.landed) {
			return
		}
		q.sqAck++
		if s.signaled {
			q.sendWCLocked(s, i, verbs.WCSuccess)
		}
	}
}

// enterErrorLocked moves the QP to the error state and flushes.
func (q *qp) enterErrorLocked() {
	if q.state == qpError {
		q.flushLocked()
		return
	}
	q.state = qpError
	q.rnrWait = false
	if q.rnrTimer != nil {
		q.rnrTimer.Stop()
	}
	q.flushLocked()
	q.kickLocked()
	q.ring()
}

// flushLocked completes every outstanding WR of an error-state QP in order:
// with its recorded error, with success if it was acknowledged before the
// error, otherwise with WCWRFlushErr. Error and flush completions are
// generated for unsignaled WRs too, as on hardware. It stops at a slot an
// engine is still using; the engine calls it again when done.
func (q *qp) flushLocked() {
	for q.sqAck < q.sqTail {
		i := q.sqAck
		if i == q.txBusy || i == q.rxBusy {
			break
		}
		s := q.slot(i)
		st := verbs.WCWRFlushErr
		switch {
		case s.failed && i < q.sentHigh: // reached by the send queue before the error
			st = s.status
		case i < q.ackTo && i < q.sqNext && (s.op != verbs.OpRDMARead || s.landed):
			st = verbs.WCSuccess
		}
		q.sqAck++
		if st != verbs.WCSuccess || s.signaled {
			q.sendWCLocked(s, i, st)
		}
	}
	if q.sqNext < q.sqAck {
		q.sqNext = q.sqAck
	}
	for q.rqHead < q.rqTail && !q.rqBusy {
		q.recvWCLocked(q.rslot(q.rqHead), verbs.WCWRFlushErr)
	}
}

// injectError moves the QP to the error state (CQ overrun, fault injection).
// The link stays up: the peer learns of it when its next request finds a
// dead responder.
func (q *qp) injectError() {
	q.mu.Lock()
	if q.state != qpError {
		q.enterErrorLocked()
	}
	q.mu.Unlock()
	q.ring()
}

// Close destroys the QP: a connected QP disconnects (the peer sees DISC),
// the engines stop, and everything outstanding completes with WCWRFlushErr.
// It blocks until the engines have exited (at most discLinger when the peer
// does not answer the DISC); afterwards the QP's memory is not touched.
func (q *qp) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return fmt.Errorf("%w: queue pair", verbs.ErrClosed)
	}
	q.closed = true
	q.mu.Unlock()

	q.shutdown(true, verbs.ErrDisconnected)
	q.waitEngines()

	q.mu.Lock()
	q.enterErrorLocked()
	q.dropRespLocked()
	if q.rnrTimer != nil {
		q.rnrTimer.Stop()
	}
	q.mu.Unlock()

	q.sendCQ.detach(q)
	q.recvCQ.detach(q)
	q.pd.unuse()
	q.dev.freeQPN(q.num)
	q.dev.release(&q.dev.nQP)
	return nil
}
