package initiator

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// qpair is the transport half of one NVMe queue: an RC QP whose SEND
// carries command capsules and whose pre-posted 16-byte receives take
// response capsules, one CQ for both, and a table of command slots.
//
// A qpair has no lock. Its owner serialises every method: the goroutine
// that owns the IOQueue, or the admin queue's mutex.
type qpair struct {
	qid   uint16
	depth int // command slots = receive buffers = send WRs

	id verbs.ConnID
	qp verbs.QueuePair
	cq verbs.CompletionQueue

	// ctrl is the registered control region: depth SQEs (64 B), depth
	// response buffers (16 B) and depth Dataset Management ranges (16 B).
	ctrl   []byte
	ctrlMR verbs.MemoryRegion

	slots    []slot
	free     []uint16 // stack of free slot indices
	slotBits int      // CID = gen<<slotBits | slot index
	slotMask uint16

	sends   []verbs.SendWR // pending batch, posted by flush
	recvs   []verbs.RecvWR // receives to repost, posted at the end of poll
	recvSGE []verbs.SGE    // one SGE per receive buffer
	wcs     []verbs.WorkCompletion

	busy int   // slots allocated
	err  error // first failure; the qpair is dead once set

	// onComplete is called (by poll, on the owner's goroutine) when a
	// command has both its SEND completion and its response. It must not
	// block and must not call back into the qpair except release.
	onComplete func(idx uint16)
	// onFail is called once, with the first failure.
	onFail func(error)
}

// slot is the state of one command identifier.
type slot struct {
	gen   uint16
	busy  bool // allocated; CID valid
	sent  bool // SEND completion seen
	resp  bool // response received
	done  bool // onComplete called or failed; waiting for release
	cqe   nvme.CQE
	sge   [2]verbs.SGE
	io    *IO
	cmd   *adminCmd
	start time.Time
}

// wrRecv marks receive work request IDs; the low bits are the buffer index.
const wrRecv = 1 << 63

const (
	dsmAreaSize = nvme.DSMRangeSize
	ctrlPerSlot = nvme.SQESize + nvme.CQESize + dsmAreaSize
	// ctrlAccess: the target RDMA-READs the per-slot DSM ranges.
	ctrlAccess = verbs.AccessLocalWrite | verbs.AccessRemoteRead
)

// queueSetup are the inputs to dialQueue.
type queueSetup struct {
	provider verbs.Provider
	addr     string
	qid      uint16
	depth    int // requested; clamped to device limits
	sendSGE  int // 2 to allow in-capsule data, else 1
	vector   int
	cntlid   uint16
	// pd is the controller's PD; nil on the first (admin) queue, which
	// allocates it on its device and returns it.
	pd verbs.ProtectionDomain
}

// dialQueue resolves addr, creates the CQ, QP and control region on the
// controller's PD, pre-posts the receives and performs the RDMA CM
// connect with NVMe-oF private data. On success the qpair is connected but
// the fabrics Connect command has not been sent. The returned PD is the
// one the qpair uses (allocated here when setup.pd is nil; then the caller
// owns it even on error, when it is non-nil).
func dialQueue(ctx context.Context, s queueSetup) (q *qpair, pd verbs.ProtectionDomain, err error) {
	pd = s.pd
	id, err := s.provider.Resolve(ctx, s.addr, verbs.ResolveOptions{})
	if err != nil {
		return nil, pd, fmt.Errorf("initiator: queue %d: resolve %s: %w", s.qid, s.addr, err)
	}
	q = &qpair{qid: s.qid, id: id}
	defer func() {
		if err != nil {
			q.destroy()
			q = nil
		}
	}()
	dev := id.Device()
	attr := dev.Attr()
	depth := clampDepth(s.depth, attr)
	if depth < MinQueueDepth {
		return q, pd, fmt.Errorf("%w: queue %d: device %s allows a queue depth of only %d", ErrNotSupported, s.qid, dev.Name(), depth)
	}
	sendSGE := s.sendSGE
	if sendSGE < 1 {
		sendSGE = 1
	}
	if attr.MaxSGE > 0 && sendSGE > attr.MaxSGE {
		sendSGE = attr.MaxSGE
	}
	if pd == nil {
		if pd, err = dev.AllocPD(); err != nil {
			return q, nil, fmt.Errorf("initiator: alloc PD on %s: %w", dev.Name(), err)
		}
	}
	vec := 0
	if attr.NumCompVectors > 0 {
		vec = s.vector % attr.NumCompVectors
	}
	if q.cq, err = dev.CreateCQ(2*depth, vec); err != nil {
		return q, pd, fmt.Errorf("initiator: queue %d: create CQ of %d: %w", s.qid, 2*depth, err)
	}
	q.qp, err = id.CreateQP(pd, verbs.QPInitAttr{
		SendCQ:    q.cq,
		RecvCQ:    q.cq,
		Cap:       verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: sendSGE, MaxRecvSGE: 1},
		SignalAll: true,
	})
	if err != nil {
		return q, pd, fmt.Errorf("initiator: queue %d: create QP (depth %d): %w", s.qid, depth, err)
	}
	if err = q.init(pd, depth); err != nil {
		return q, pd, err
	}
	// Receives must be in place before the target can answer.
	for i := 0; i < depth; i++ {
		q.recvs = append(q.recvs, verbs.RecvWR{ID: wrRecv | uint64(i), SGL: q.recvSGE[i : i+1]})
	}
	if err = q.postRecvs(); err != nil {
		return q, pd, err
	}
	var priv [nvme.CMRequestSize]byte
	req := nvme.CMRequest{QID: s.qid, HRQSize: uint16(depth), HSQSize: uint16(depth - 1), CNTLID: s.cntlid}
	if err = req.Marshal(priv[:]); err != nil {
		return q, pd, err
	}
	rd := attr.MaxQPRdAtom
	if rd > 255 {
		rd = 255
	}
	if rd < 0 {
		rd = 0
	}
	acc, err := id.Connect(ctx, verbs.ConnParam{
		PrivateData: priv[:],
		// The target RDMA-READs host memory for writes: accept as many
		// as the device can.
		ResponderResources: uint8(rd),
		// The host never issues RDMA READs (as the Linux host: 0).
		InitiatorDepth: 0,
		RetryCount:     7,
		RNRRetryCount:  7,
		FlowControl:    true,
	})
	if err != nil {
		if rerr := refusedError(s.addr, err); rerr != nil {
			return q, pd, rerr
		}
		return q, pd, fmt.Errorf("initiator: queue %d: rdma connect: %w", s.qid, rejectError(s.qid, err))
	}
	if len(acc.PrivateData) >= 4 {
		a, perr := nvme.ParseCMAccept(acc.PrivateData)
		if perr != nil {
			return q, pd, fmt.Errorf("%w: queue %d: accept private data: %v", ErrProtocol, s.qid, perr)
		}
		// Never have more commands outstanding than the controller
		// can receive.
		if a.CRQSize > 0 && int(a.CRQSize) < q.depth {
			q.limit(int(a.CRQSize))
		}
	}
	if q.depth < 1 {
		return q, pd, fmt.Errorf("%w: queue %d: controller receive queue size 0", ErrProtocol, s.qid)
	}
	return q, pd, nil
}

// clampDepth bounds a requested queue depth by the device: one send WR
// and one receive WR per command, and a CQ holding both.
func clampDepth(depth int, attr verbs.DeviceAttr) int {
	if attr.MaxQPWR > 0 && depth > attr.MaxQPWR {
		depth = attr.MaxQPWR
	}
	if attr.MaxCQE > 0 && 2*depth > attr.MaxCQE {
		depth = attr.MaxCQE / 2
	}
	if depth > 1<<16 {
		depth = 1 << 16
	}
	return depth
}

// init allocates the control region and slot table for depth commands.
func (q *qpair) init(pd verbs.ProtectionDomain, depth int) error {
	mem, err := allocRegistered(depth * ctrlPerSlot)
	if err != nil {
		return err
	}
	q.ctrl = mem
	if q.ctrlMR, err = pd.RegisterMemory(mem, ctrlAccess); err != nil {
		return fmt.Errorf("initiator: queue %d: register control region: %w", q.qid, err)
	}
	q.depth = depth
	q.slotBits = bits.Len(uint(depth - 1))
	q.slotMask = uint16(1<<q.slotBits - 1)
	q.slots = make([]slot, depth)
	q.free = make([]uint16, 0, depth)
	for i := depth - 1; i >= 0; i-- {
		q.free = append(q.free, uint16(i))
	}
	q.sends = make([]verbs.SendWR, 0, depth)
	q.recvs = make([]verbs.RecvWR, 0, depth)
	q.recvSGE = make([]verbs.SGE, depth)
	for i := range q.recvSGE {
		q.recvSGE[i] = verbs.SGE{Addr: q.ctrlMR.Addr() + uint64(q.rspOff(i)), Length: nvme.CQESize, LKey: q.ctrlMR.LKey()}
	}
	q.wcs = make([]verbs.WorkCompletion, min(2*depth, 64))
	return nil
}

// limit reduces the usable command slots to n (< depth): the remaining
// slots are never handed out. Receives stay posted for all depth buffers.
func (q *qpair) limit(n int) {
	kept := q.free[:0]
	for _, i := range q.free {
		if int(i) < n {
			kept = append(kept, i)
		}
	}
	q.free = kept
	q.depth = n
}

func (q *qpair) sqeOff(i int) int { return i * nvme.SQESize }
func (q *qpair) rspOff(i int) int { return len(q.slots)*nvme.SQESize + i*nvme.CQESize }
func (q *qpair) dsmOff(i int) int {
	return len(q.slots)*(nvme.SQESize+nvme.CQESize) + i*dsmAreaSize
}

// sqe returns the registered SQE of slot i.
func (q *qpair) sqe(i uint16) *nvme.SQE {
	o := q.sqeOff(int(i))
	return (*nvme.SQE)(q.ctrl[o : o+nvme.SQESize])
}

// dsmArea returns the registered DSM range area of slot i.
func (q *qpair) dsmArea(i uint16) []byte {
	o := q.dsmOff(int(i))
	return q.ctrl[o : o+dsmAreaSize]
}

// cid is the command identifier of slot i in its current generation.
func (q *qpair) cid(i uint16) uint16 {
	return q.slots[i].gen<<q.slotBits | i
}

// alloc takes a free slot, starts a new CID generation and returns its
// zeroed SQE with the CID and PSDT (SGL) already set.
func (q *qpair) alloc() (uint16, *nvme.SQE, bool) {
	if len(q.free) == 0 {
		return 0, nil, false
	}
	i := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	s := &q.slots[i]
	s.gen++
	if q.slotBits >= 16 {
		s.gen = 0
	} else {
		s.gen &= 1<<(16-q.slotBits) - 1
	}
	s.busy, s.sent, s.resp, s.done = true, false, false, false
	q.busy++
	e := q.sqe(i)
	*e = nvme.SQE{}
	e.SetCID(q.cid(i))
	e.SetPSDT(nvme.PSDTSGL)
	return i, e, true
}

// release frees slot i for a new command.
func (q *qpair) release(i uint16) {
	s := &q.slots[i]
	if !s.busy {
		return
	}
	s.busy, s.io, s.cmd = false, nil, nil
	q.busy--
	q.free = append(q.free, i)
}

// setKeyed points SGL1 of slot i's SQE at n bytes of buf (keyed data block,
// subtype Address: the target must not expect invalidation).
func setKeyed(e *nvme.SQE, addr uint64, n int, rkey uint32) {
	e.SGL1().SetKeyed(addr, uint32(n), rkey, nvme.SGLSubtypeAddress)
}

// queueSend appends the command SEND of slot i to the pending batch. With
// data non-nil, n bytes of it travel in the capsule as a second SGE and
// SGL1 must already describe them as in-capsule data (offset 0).
func (q *qpair) queueSend(i uint16, data *Buffer, n int) {
	s := &q.slots[i]
	s.sge[0] = verbs.SGE{Addr: q.ctrlMR.Addr() + uint64(q.sqeOff(int(i))), Length: nvme.SQESize, LKey: q.ctrlMR.LKey()}
	nsge := 1
	if data != nil && n > 0 {
		s.sge[1] = data.sge(n)
		nsge = 2
	}
	q.sends = append(q.sends, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: s.sge[:nsge]})
}

// flush posts the pending SENDs with one PostSend call (one doorbell).
func (q *qpair) flush() error {
	if q.err != nil {
		return q.err
	}
	for len(q.sends) > 0 {
		n, err := q.qp.PostSend(q.sends)
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: post send: %w", ErrControllerLost, q.qid, err))
			return q.err
		}
		// A provider may accept a prefix without error only if it
		// reports it; loop on the rest.
		copy(q.sends, q.sends[n:])
		q.sends = q.sends[:len(q.sends)-n]
		if n == 0 {
			q.fail(fmt.Errorf("%w: queue %d: post send accepted nothing", ErrControllerLost, q.qid))
			return q.err
		}
	}
	return nil
}

// postRecvs posts the pending receive reposts.
func (q *qpair) postRecvs() error {
	for len(q.recvs) > 0 {
		n, err := q.qp.PostRecv(q.recvs)
		if err != nil || n == 0 {
			if err == nil {
				err = errors.New("post recv accepted nothing")
			}
			q.fail(fmt.Errorf("%w: queue %d: post recv: %w", ErrControllerLost, q.qid, err))
			return q.err
		}
		copy(q.recvs, q.recvs[n:])
		q.recvs = q.recvs[:len(q.recvs)-n]
	}
	return nil
}

// fail records the first failure and reports it. Later failures are
// dropped.
func (q *qpair) fail(err error) {
	if q.err != nil {
		return
	}
	q.err = err
	if q.onFail != nil {
		q.onFail(err)
	}
}

// poll reaps work completions without blocking and returns how many it
// processed. Commands whose SEND and response have both completed are
// handed to onComplete. A malformed or unexpected completion fails the
// qpair (never panics).
func (q *qpair) poll() int {
	if q.err != nil {
		q.drain()
		return 0
	}
	total := 0
	for {
		n, err := q.cq.Poll(q.wcs)
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: poll CQ: %w", ErrControllerLost, q.qid, err))
			return total
		}
		for k := 0; k < n; k++ {
			q.handle(&q.wcs[k])
			if q.err != nil {
				return total + k + 1
			}
		}
		total += n
		if err := q.postRecvs(); err != nil {
			return total
		}
		if n < len(q.wcs) {
			return total
		}
	}
}

// drain empties the CQ of a failed qpair (flush completions).
func (q *qpair) drain() {
	if q.cq == nil {
		return
	}
	for {
		n, err := q.cq.Poll(q.wcs)
		if err != nil || n < len(q.wcs) {
			return
		}
	}
}

// handle processes one work completion.
func (q *qpair) handle(wc *verbs.WorkCompletion) {
	if wc.Status != verbs.WCSuccess {
		q.fail(fmt.Errorf("%w: queue %d: work completion %#x: %v (vendor error %#x)", ErrControllerLost, q.qid, wc.ID, wc.Status, wc.VendorErr))
		return
	}
	if wc.ID&wrRecv != 0 {
		q.handleRecv(wc)
		return
	}
	i := wc.ID
	if i >= uint64(len(q.slots)) || !q.slots[i].busy || q.slots[i].sent || q.slots[i].done {
		q.fail(fmt.Errorf("%w: %w: queue %d: send completion for slot %d that is not outstanding", ErrControllerLost, ErrProtocol, q.qid, i))
		return
	}
	s := &q.slots[i]
	s.sent = true
	if s.resp {
		s.done = true
		q.onComplete(uint16(i))
	}
}

// handleRecv matches a response capsule to its command by CID and reposts
// the receive buffer.
func (q *qpair) handleRecv(wc *verbs.WorkCompletion) {
	b := wc.ID &^ wrRecv
	if b >= uint64(len(q.recvSGE)) {
		q.fail(fmt.Errorf("%w: %w: queue %d: receive completion with unknown ID %#x", ErrControllerLost, ErrProtocol, q.qid, wc.ID))
		return
	}
	if wc.ByteLen < nvme.CQESize {
		q.fail(fmt.Errorf("%w: %w: queue %d: response capsule of %d bytes", ErrControllerLost, ErrProtocol, q.qid, wc.ByteLen))
		return
	}
	o := q.rspOff(int(b))
	cqe := (*nvme.CQE)(q.ctrl[o : o+nvme.CQESize])
	cid := cqe.CID()
	i := cid & q.slotMask
	if int(i) >= len(q.slots) {
		q.fail(fmt.Errorf("%w: %w: queue %d: response for CID %#x: no such command", ErrControllerLost, ErrProtocol, q.qid, cid))
		return
	}
	s := &q.slots[i]
	if !s.busy || s.resp || s.done || q.cid(i) != cid {
		q.fail(fmt.Errorf("%w: %w: queue %d: response for CID %#x that is not outstanding", ErrControllerLost, ErrProtocol, q.qid, cid))
		return
	}
	s.cqe = *cqe
	s.resp = true
	q.recvs = append(q.recvs, verbs.RecvWR{ID: wc.ID, SGL: q.recvSGE[b : b+1]})
	if s.sent {
		s.done = true
		q.onComplete(i)
	}
}

// failOutstanding marks every allocated, not yet completed slot done and
// calls fn for it. Used once the qpair or the controller is dead.
func (q *qpair) failOutstanding(fn func(idx uint16)) {
	for i := range q.slots {
		s := &q.slots[i]
		if s.busy && !s.done {
			s.done = true
			fn(uint16(i))
		}
	}
}

// disconnect moves the QP to the error state and tells the peer.
func (q *qpair) disconnect() {
	if q.id != nil {
		_ = q.id.Disconnect()
	}
}

// destroy releases every verbs object of the qpair and its control
// memory. The caller guarantees no goroutine uses the qpair any more.
func (q *qpair) destroy() error {
	var errs []error
	if q.id != nil {
		_ = q.id.Disconnect()
	}
	if q.qp != nil {
		if err := q.qp.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		q.qp = nil
	}
	if q.id != nil {
		if err := q.id.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if q.cq != nil {
		if err := q.cq.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		q.cq = nil
	}
	if q.ctrlMR != nil {
		if err := q.ctrlMR.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		q.ctrlMR = nil
	}
	freeRegistered(q.ctrl)
	q.ctrl = nil
	return errors.Join(errs...)
}
