package initiator

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// rdmaWire is the wire of one queue over RDMA: an RC QP whose SEND
// carries command capsules and whose pre-posted 16-byte receives take
// response capsules, and one CQ for both. Data is named by keyed SGLs and
// moved by the target's RDMA READ and WRITE; in-capsule write data travels
// as a second SGE of the command SEND.
type rdmaWire struct {
	q *qpair

	id verbs.ConnID
	qp verbs.QueuePair
	cq verbs.CompletionQueue

	// ctrl is the registered control region: depth SQEs (64 B), depth
	// response buffers (16 B) and depth Dataset Management ranges (16 B).
	ctrl   []byte
	ctrlMR verbs.MemoryRegion

	// inCapsule is the in-capsule data limit of this queue's commands
	// (0: none, the admin queue).
	inCapsule int

	sends   []verbs.SendWR // pending batch, posted by flush
	recvs   []verbs.RecvWR // receives to repost, posted at the end of poll
	recvSGE []verbs.SGE    // one SGE per receive buffer
	wcs     []verbs.WorkCompletion

	sge  [][2]verbs.SGE // per slot: the SEND's SQE and capsule SGEs
	capB []*Buffer      // per slot: in-capsule data buffer (setData)
	capN []int
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
	// inCapsule is the in-capsule data limit of the queue's commands
	// (used when the QP gets 2 send SGEs).
	inCapsule int
	vector    int
	cntlid    uint16
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
	q = &qpair{qid: s.qid}
	w := &rdmaWire{q: q, id: id}
	q.w = w
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
	if sendSGE >= 2 {
		w.inCapsule = s.inCapsule
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
	if w.cq, err = dev.CreateCQ(2*depth, vec); err != nil {
		return q, pd, fmt.Errorf("initiator: queue %d: create CQ of %d: %w", s.qid, 2*depth, err)
	}
	w.qp, err = id.CreateQP(pd, verbs.QPInitAttr{
		SendCQ:    w.cq,
		RecvCQ:    w.cq,
		Cap:       verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: sendSGE, MaxRecvSGE: 1},
		SignalAll: true,
	})
	if err != nil {
		return q, pd, fmt.Errorf("initiator: queue %d: create QP (depth %d): %w", s.qid, depth, err)
	}
	if err = w.init(pd, depth); err != nil {
		return q, pd, err
	}
	// Receives must be in place before the target can answer.
	if err = w.postAllRecvs(); err != nil {
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

// init allocates the control region and the qpair's slot table for depth
// commands.
func (w *rdmaWire) init(pd verbs.ProtectionDomain, depth int) error {
	mem, err := allocRegistered(depth * ctrlPerSlot)
	if err != nil {
		return err
	}
	w.ctrl = mem
	if w.ctrlMR, err = pd.RegisterMemory(mem, ctrlAccess); err != nil {
		return fmt.Errorf("initiator: queue %d: register control region: %w", w.q.qid, err)
	}
	w.q.initSlots(depth)
	w.sge = make([][2]verbs.SGE, depth)
	w.capB = make([]*Buffer, depth)
	w.capN = make([]int, depth)
	w.sends = make([]verbs.SendWR, 0, depth)
	w.recvs = make([]verbs.RecvWR, 0, depth)
	w.recvSGE = make([]verbs.SGE, depth)
	for i := range w.recvSGE {
		w.recvSGE[i] = verbs.SGE{Addr: w.ctrlMR.Addr() + uint64(w.rspOff(i)), Length: nvme.CQESize, LKey: w.ctrlMR.LKey()}
	}
	w.wcs = make([]verbs.WorkCompletion, min(2*depth, 64))
	return nil
}

// postAllRecvs posts a receive for every response buffer (Receives stay
// posted for all depth buffers, also when limit reduced the slots).
func (w *rdmaWire) postAllRecvs() error {
	for i := range w.recvSGE {
		w.recvs = append(w.recvs, verbs.RecvWR{ID: wrRecv | uint64(i), SGL: w.recvSGE[i : i+1]})
	}
	return w.postRecvs()
}

func (w *rdmaWire) sqeOff(i int) int { return i * nvme.SQESize }
func (w *rdmaWire) rspOff(i int) int { return len(w.q.slots)*nvme.SQESize + i*nvme.CQESize }
func (w *rdmaWire) dsmOff(i int) int {
	return len(w.q.slots)*(nvme.SQESize+nvme.CQESize) + i*dsmAreaSize
}

// sqe returns the registered SQE of slot i.
func (w *rdmaWire) sqe(i uint16) *nvme.SQE {
	o := w.sqeOff(int(i))
	return (*nvme.SQE)(w.ctrl[o : o+nvme.SQESize])
}

// dsmArea returns the registered DSM range area of slot i.
func (w *rdmaWire) dsmArea(i uint16) []byte {
	o := w.dsmOff(int(i))
	return w.ctrl[o : o+dsmAreaSize]
}

// setKeyed points SGL1 of slot i's SQE at n bytes of buf (keyed data block,
// subtype Address: the target must not expect invalidation).
func setKeyed(e *nvme.SQE, addr uint64, n int, rkey uint32) {
	e.SGL1().SetKeyed(addr, uint32(n), rkey, nvme.SGLSubtypeAddress)
}

// setData names the data by a keyed SGL (the pool buffer, a MemRegion
// view, or the registered DSM area), or — capsule, host to controller,
// within the queue's in-capsule limit — as in-capsule data at offset 0
// sent as the SEND's second SGE.
func (w *rdmaWire) setData(i uint16, e *nvme.SQE, b *Buffer, n int, toCtrl, capsule bool) {
	w.capB[i], w.capN[i] = nil, 0
	switch {
	case n <= 0:
		e.SGL1().SetNull()
	case b == nil:
		setKeyed(e, w.ctrlMR.Addr()+uint64(w.dsmOff(int(i))), n, w.ctrlMR.RKey())
	case capsule && toCtrl && n <= w.inCapsule:
		e.SGL1().SetDataBlock(0, uint32(n), nvme.SGLSubtypeOffset)
		w.capB[i], w.capN[i] = b, n
	default:
		setKeyed(e, b.addr, n, b.rkey)
	}
}

// queueSend appends the command SEND of slot i to the pending batch,
// with its in-capsule data (setData) as a second SGE.
func (w *rdmaWire) queueSend(i uint16) {
	sg := &w.sge[i]
	sg[0] = verbs.SGE{Addr: w.ctrlMR.Addr() + uint64(w.sqeOff(int(i))), Length: nvme.SQESize, LKey: w.ctrlMR.LKey()}
	nsge := 1
	if b := w.capB[i]; b != nil {
		sg[1] = b.sge(w.capN[i])
		nsge = 2
	}
	w.sends = append(w.sends, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sg[:nsge]})
}

func (w *rdmaWire) pending() int { return len(w.sends) }

// flush posts the pending SENDs with one PostSend call (one doorbell).
func (w *rdmaWire) flush() error {
	q := w.q
	for len(w.sends) > 0 {
		n, err := w.qp.PostSend(w.sends)
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: post send: %w", ErrControllerLost, q.qid, err))
			return q.err
		}
		// A provider may accept a prefix without error only if it
		// reports it; loop on the rest.
		copy(w.sends, w.sends[n:])
		w.sends = w.sends[:len(w.sends)-n]
		if n == 0 {
			q.fail(fmt.Errorf("%w: queue %d: post send accepted nothing", ErrControllerLost, q.qid))
			return q.err
		}
	}
	return nil
}

// postRecvs posts the pending receive reposts.
func (w *rdmaWire) postRecvs() error {
	q := w.q
	for len(w.recvs) > 0 {
		n, err := w.qp.PostRecv(w.recvs)
		if err != nil || n == 0 {
			if err == nil {
				err = errors.New("post recv accepted nothing")
			}
			q.fail(fmt.Errorf("%w: queue %d: post recv: %w", ErrControllerLost, q.qid, err))
			return q.err
		}
		copy(w.recvs, w.recvs[n:])
		w.recvs = w.recvs[:len(w.recvs)-n]
	}
	return nil
}

// poll reaps work completions without blocking and returns how many it
// processed.
func (w *rdmaWire) poll() int {
	q := w.q
	if q.err != nil {
		w.drain()
		return 0
	}
	total := 0
	for {
		n, err := w.cq.Poll(w.wcs)
		if err != nil {
			q.fail(fmt.Errorf("%w: queue %d: poll CQ: %w", ErrControllerLost, q.qid, err))
			return total
		}
		for k := 0; k < n; k++ {
			w.handle(&w.wcs[k])
			if q.err != nil {
				return total + k + 1
			}
		}
		total += n
		if err := w.postRecvs(); err != nil {
			return total
		}
		if n < len(w.wcs) {
			return total
		}
	}
}

// drain empties the CQ of a failed qpair (flush completions).
func (w *rdmaWire) drain() {
	if w.cq == nil {
		return
	}
	for {
		n, err := w.cq.Poll(w.wcs)
		if err != nil || n < len(w.wcs) {
			return
		}
	}
}

// handle processes one work completion.
func (w *rdmaWire) handle(wc *verbs.WorkCompletion) {
	q := w.q
	if wc.Status != verbs.WCSuccess {
		q.fail(fmt.Errorf("%w: queue %d: work completion %#x: %v (vendor error %#x)", ErrControllerLost, q.qid, wc.ID, wc.Status, wc.VendorErr))
		return
	}
	if wc.ID&wrRecv != 0 {
		w.handleRecv(wc)
		return
	}
	q.sendDone(wc.ID)
}

// handleRecv matches a response capsule to its command by CID and reposts
// the receive buffer.
func (w *rdmaWire) handleRecv(wc *verbs.WorkCompletion) {
	q := w.q
	b := wc.ID &^ wrRecv
	if b >= uint64(len(w.recvSGE)) {
		q.fail(fmt.Errorf("%w: %w: queue %d: receive completion with unknown ID %#x", ErrControllerLost, ErrProtocol, q.qid, wc.ID))
		return
	}
	if wc.ByteLen < nvme.CQESize {
		q.fail(fmt.Errorf("%w: %w: queue %d: response capsule of %d bytes", ErrControllerLost, ErrProtocol, q.qid, wc.ByteLen))
		return
	}
	o := w.rspOff(int(b))
	cqe := (*nvme.CQE)(w.ctrl[o : o+nvme.CQESize])
	// response copies the CQE; the repost is posted at the end of poll.
	if !q.response(cqe) {
		return
	}
	w.recvs = append(w.recvs, verbs.RecvWR{ID: wc.ID, SGL: w.recvSGE[b : b+1]})
}

func (w *rdmaWire) arm() error { return w.cq.ReqNotify() }

func (w *rdmaWire) notify() <-chan struct{} { return w.cq.Notify() }

func (w *rdmaWire) fdNotifier() verbs.FDNotifier {
	n, _ := w.cq.(verbs.FDNotifier)
	return n
}

func (w *rdmaWire) connDone() <-chan struct{} { return w.id.Done() }

func (w *rdmaWire) connErr() error { return w.id.Err() }

// disconnect moves the QP to the error state and tells the peer.
func (w *rdmaWire) disconnect() {
	if w.id != nil {
		_ = w.id.Disconnect()
	}
}

// destroy releases every verbs object of the qpair and its control
// memory. The caller guarantees no goroutine uses the qpair any more.
func (w *rdmaWire) destroy() error {
	var errs []error
	if w.id != nil {
		_ = w.id.Disconnect()
	}
	if w.qp != nil {
		if err := w.qp.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		w.qp = nil
	}
	if w.id != nil {
		if err := w.id.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
	}
	if w.cq != nil {
		if err := w.cq.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		w.cq = nil
	}
	if w.ctrlMR != nil {
		if err := w.ctrlMR.Close(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			errs = append(errs, err)
		}
		w.ctrlMR = nil
	}
	freeRegistered(w.ctrl)
	w.ctrl = nil
	return errors.Join(errs...)
}
