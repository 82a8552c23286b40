package rdma

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// rawHost speaks the NVMe-oF RDMA wire protocol with raw verbs, so tests
// can send well-formed and malformed capsules and observe exactly what the
// target does. It is driven by one test goroutine.
type rawHost struct {
	t     testing.TB
	id    verbs.ConnID
	pd    verbs.ProtectionDomain
	cq    verbs.CompletionQueue
	qp    verbs.QueuePair
	mem   []byte
	mr    verbs.MemoryRegion
	param verbs.ConnParam // the accept parameters
	acc   nvme.CMAccept
	// cntlid is the controller ID from a successful admin Connect.
	cntlid uint16

	depth   int // command buffers (send queue)
	hrq     int // response buffers (receive queue)
	capSize int // bytes per command buffer
	rspOff  int
	dataOff int
	next    int // next command buffer
	wc      []verbs.WorkCompletion
	// sendErr is the first failed SEND completion seen.
	sendErr *verbs.WorkCompletion
	// rsps[rspHead:] are response completions polled but not yet taken.
	rsps    []rawRsp
	rspHead int
	// Preallocated work requests (the host's hot path allocates nothing).
	sendWR  [1]verbs.SendWR
	sendSGE [1]verbs.SGE
	recvWR  [1]verbs.RecvWR
	recvSGE [1]verbs.SGE
}

type rawRsp struct {
	wc  verbs.WorkCompletion
	cqe nvme.CQE
}

type rawOpts struct {
	qid      uint16
	depth    int    // queue entries: hsqsize = depth-1 (default 32)
	hrqsize  int    // 0: depth
	ird      uint8  // host responder resources (0: device max, 255)
	irdZero  bool   // offer no responder resources at all
	private  []byte // raw private data instead of a CM request
	capSize  int    // command buffer size (default 64 + 4096)
	dataSize int    // registered data area (default 1 MiB)
	local    string // local address (the host the target sees)
}

// dialRaw connects a raw host. A rejected connection returns the
// *verbs.RejectError.
func dialRaw(ctx context.Context, t testing.TB, prov verbs.Provider, addr string, o rawOpts) (*rawHost, error) {
	t.Helper()
	if o.depth == 0 {
		o.depth = 32
	}
	if o.hrqsize == 0 {
		o.hrqsize = o.depth
	}
	if o.ird == 0 && !o.irdZero {
		o.ird = 255
	}
	if o.capSize == 0 {
		o.capSize = nvme.SQESize + 4096
	}
	if o.dataSize == 0 {
		o.dataSize = 1 << 20
	}
	id, err := prov.Resolve(ctx, addr, verbs.ResolveOptions{LocalAddr: o.local})
	if err != nil {
		return nil, err
	}
	h := &rawHost{t: t, id: id, depth: o.depth, hrq: o.hrqsize, capSize: o.capSize}
	fail := func(err error) (*rawHost, error) {
		h.close()
		return nil, err
	}
	dev := id.Device()
	if h.pd, err = dev.AllocPD(); err != nil {
		return fail(err)
	}
	if h.cq, err = dev.CreateCQ(o.depth+o.hrqsize, 0); err != nil {
		return fail(err)
	}
	if h.qp, err = id.CreateQP(h.pd, verbs.QPInitAttr{SendCQ: h.cq, RecvCQ: h.cq, Cap: verbs.QPCap{
		MaxSendWR: o.depth, MaxRecvWR: o.hrqsize, MaxSendSGE: 1, MaxRecvSGE: 1,
	}}); err != nil {
		return fail(err)
	}
	h.rspOff = o.depth * o.capSize
	h.dataOff = h.rspOff + o.hrqsize*nvme.CQESize
	h.mem = make([]byte, h.dataOff+o.dataSize)
	if h.mr, err = h.pd.RegisterMemory(h.mem, verbs.AccessLocalWrite|verbs.AccessRemoteRead|verbs.AccessRemoteWrite); err != nil {
		return fail(err)
	}
	for i := range o.hrqsize {
		if err := h.postRecv(i); err != nil {
			return fail(err)
		}
	}
	pd := o.private
	if pd == nil {
		pd = make([]byte, nvme.CMRequestSize)
		r := nvme.CMRequest{QID: o.qid, HRQSize: uint16(o.hrqsize), HSQSize: uint16(o.depth - 1)}
		r.Marshal(pd)
	}
	h.param, err = id.Connect(ctx, verbs.ConnParam{
		PrivateData: pd, ResponderResources: o.ird, InitiatorDepth: 0,
		RetryCount: 7, RNRRetryCount: 7, FlowControl: true,
	})
	if err != nil {
		return fail(err)
	}
	if h.acc, err = nvme.ParseCMAccept(h.param.PrivateData); err != nil {
		return fail(err)
	}
	h.wc = make([]verbs.WorkCompletion, 16)
	h.rsps = make([]rawRsp, 0, o.hrqsize)
	return h, nil
}

func (h *rawHost) postRecv(i int) error {
	off := h.rspOff + i*nvme.CQESize
	h.recvSGE[0] = verbs.SGE{Addr: h.mr.Addr() + uint64(off), Length: nvme.CQESize, LKey: h.mr.LKey()}
	h.recvWR[0] = verbs.RecvWR{ID: uint64(i), SGL: h.recvSGE[:]}
	_, err := h.qp.PostRecv(h.recvWR[:])
	return err
}

func (h *rawHost) close() {
	if h.id != nil {
		_ = h.id.Disconnect()
	}
	if h.qp != nil {
		_ = h.qp.Close()
	}
	if h.mr != nil {
		_ = h.mr.Close()
	}
	if h.cq != nil {
		_ = h.cq.Close()
	}
	if h.pd != nil {
		_ = h.pd.Close()
	}
	if h.id != nil {
		_ = h.id.Close()
	}
}

// data is the registered data area; dataAddr the address of data()[off].
func (h *rawHost) data() []byte            { return h.mem[h.dataOff:] }
func (h *rawHost) dataAddr(off int) uint64 { return h.mr.Addr() + uint64(h.dataOff+off) }
func (h *rawHost) rkey() uint32            { return h.mr.RKey() }

// send posts one capsule (any bytes) as a SEND.
func (h *rawHost) send(capsule []byte) error {
	if len(capsule) > h.capSize {
		return fmt.Errorf("capsule of %d bytes exceeds the %d-byte buffer", len(capsule), h.capSize)
	}
	i := h.next
	h.next = (h.next + 1) % h.depth
	off := i * h.capSize
	copy(h.mem[off:], capsule)
	h.sendSGE[0] = verbs.SGE{Addr: h.mr.Addr() + uint64(off), Length: uint32(len(capsule)), LKey: h.mr.LKey()}
	h.sendWR[0] = verbs.SendWR{ID: 1 << 32, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: h.sendSGE[:]}
	_, err := h.qp.PostSend(h.sendWR[:])
	return err
}

// errQueueDead: the host saw its QP fail (error completion or disconnect).
var errQueueDead = errors.New("rawhost: queue dead")

// response waits for the next response (CQE) and reposts its buffer. It
// returns errQueueDead (wrapped) when the connection fails first.
func (h *rawHost) response(ctx context.Context) (rawRsp, error) {
	for {
		if h.rspHead < len(h.rsps) {
			r := h.rsps[h.rspHead]
			h.rspHead++
			if h.rspHead == len(h.rsps) {
				h.rsps, h.rspHead = h.rsps[:0], 0
			}
			return r, nil
		}
		n, err := h.drain()
		if err != nil {
			return rawRsp{}, err
		}
		if n > 0 {
			continue
		}
		if h.sendErr != nil {
			return rawRsp{}, fmt.Errorf("%w: SEND %v", errQueueDead, h.sendErr.Status)
		}
		if err := h.cq.ReqNotify(); err != nil {
			return rawRsp{}, err
		}
		if n, err := h.drain(); err != nil || n > 0 {
			if err != nil {
				return rawRsp{}, err
			}
			continue
		}
		select {
		case <-h.cq.Notify():
		case <-h.id.Done():
			if n, err := h.drain(); err == nil && n > 0 {
				continue
			}
			return rawRsp{}, fmt.Errorf("%w: %v", errQueueDead, h.id.Err())
		case <-ctx.Done():
			return rawRsp{}, ctx.Err()
		}
	}
}

// drain polls the CQ once: response CQEs are queued (their buffers
// reposted), SEND completions checked. A failed receive means the QP died.
func (h *rawHost) drain() (int, error) {
	n, err := h.cq.Poll(h.wc)
	if err != nil {
		return 0, err
	}
	for _, wc := range h.wc[:n] {
		if wc.ID>>32 == 1 { // a command SEND
			if wc.Status != verbs.WCSuccess && h.sendErr == nil {
				w := wc
				h.sendErr = &w
			}
			continue
		}
		if wc.Status != verbs.WCSuccess {
			return n, fmt.Errorf("%w: RECV %v", errQueueDead, wc.Status)
		}
		off := h.rspOff + int(wc.ID)*nvme.CQESize
		c, _ := nvme.LoadCQE(h.mem[off : off+nvme.CQESize])
		h.rsps = append(h.rsps, rawRsp{wc: wc, cqe: c})
		if err := h.postRecv(int(wc.ID)); err != nil {
			return n, err
		}
	}
	return n, nil
}

// do sends one command and waits for its response.
func (h *rawHost) do(ctx context.Context, sqe *nvme.SQE, icd []byte) (rawRsp, error) {
	if err := h.send(capsule(sqe, icd)); err != nil {
		return rawRsp{}, err
	}
	return h.response(ctx)
}

// mustOK runs a command and fails the test unless it succeeds.
func (h *rawHost) mustOK(ctx context.Context, sqe *nvme.SQE, icd []byte) nvme.CQE {
	h.t.Helper()
	r, err := h.do(ctx, sqe, icd)
	if err != nil {
		h.t.Fatalf("cid %d: %v", sqe.CID(), err)
	}
	if !r.cqe.Status().OK() || r.cqe.CID() != sqe.CID() {
		h.t.Fatalf("cid %d: CQE cid %d status %v", sqe.CID(), r.cqe.CID(), r.cqe.Status())
	}
	return r.cqe
}

// connectSQE builds a fabrics Connect; the data goes in capsule when
// inCapsule, otherwise by keyed SGL from data offset dataOff.
func (h *rawHost) connectSQE(cid, qid uint16, inCapsule bool, dataOff int, d nvme.ConnectData) (nvme.SQE, []byte) {
	h.t.Helper()
	var s nvme.SQE
	s.SetConnect(qid, uint16(h.depth-1), 0, 0)
	s.SetCID(cid)
	s.SetPSDT(nvme.PSDTSGL)
	buf := make([]byte, nvme.ConnectDataSize)
	if err := d.Marshal(buf); err != nil {
		h.t.Fatal(err)
	}
	if inCapsule {
		s.SGL1().SetDataBlock(0, nvme.ConnectDataSize, nvme.SGLSubtypeOffset)
		return s, buf
	}
	copy(h.data()[dataOff:], buf)
	s.SGL1().SetKeyed(h.dataAddr(dataOff), nvme.ConnectDataSize, h.rkey(), nvme.SGLSubtypeAddress)
	return s, nil
}
