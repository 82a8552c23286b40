package rdma

import (
	"encoding/binary"
	"math"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
)

// request is one preallocated request slot. It is owned by the queue's
// poller goroutine, except req while the core executes it (StateExecuting).
type request struct {
	req   target.Request
	state State
	idx   int32
	// recv is the receive buffer this request still holds (its in-capsule
	// data is Data), or -1.
	recv int32
	// buf is the data buffer this request holds, or -1.
	buf int32
	// next links the request into one wait list (-1: end).
	next int32
	// Keyed SGL: remote address and key, the SGL length and invalidation.
	keyed  bool
	inv    bool
	length uint32
	raddr  uint64
	rkey   uint32
	// aer marks an Asynchronous Event Request held by the core (it does not
	// hold up a graceful drain).
	aer bool
	// sendCredits is the number of send-queue slots reserved for this
	// request's WRITE and SEND, returned when the SEND completes.
	sendCredits int
	// sge[0] names the data buffer (READ / WRITE), sge[1] the CQE buffer.
	sge [2]verbs.SGE
	// cqe is the registered CQE buffer (16 bytes).
	cqe []byte
}

// reset clears the per-command fields before the slot returns to Free.
func (r *request) reset() {
	r.state = StateFree
	r.recv, r.buf, r.next = -1, -1, -1
	r.keyed, r.inv, r.aer = false, false, false
	r.length, r.raddr, r.rkey = 0, 0, 0
	r.sendCredits = 0
	r.req.Dir, r.req.Length, r.req.Data = nvme.DirNone, 0, nil
}

// commandDirection is the data direction of the command: opcode bits 1:0,
// or FCTYPE bits 1:0 for fabrics commands (NVMe-oF spec §3.3).
func commandDirection(s *nvme.SQE) nvme.DataDirection {
	if s.IsFabrics() {
		return nvme.OpcodeDirection(s.FCType())
	}
	return nvme.OpcodeDirection(s.Opcode())
}

// parseSGL validates the command's SGL1 against the in-capsule data
// received with it (icd: the bytes after the SQE, at most the queue's
// in-capsule size) and the queue's limits, and fills r's data
// description. It returns a non-success status for per-command
// errors. The arithmetic is overflow-safe: keyed address + length is
// checked against 2^64 without wrapping, and in-capsule spans go through
// nvme.SGL.InCapsuleSpan, which compares offset and length separately
// before adding them.
//
// Status choices: a keyed length above MaxDataTransfer or a keyed address
// + length past 2^64 is DataSGLLengthInvalid (the length cannot be served
// from that address); an in-capsule span outside the in-capsule data
// received (or allowed: none on the admin queue) is SGLOffsetInvalid, as
// nvmet. Unsupported descriptor types and subtypes are SGLTypeInvalid (as
// SPDK; nvmet answers a bad subtype with InvalidField). A data-carrying
// descriptor on a command without a data direction is InvalidField, as is
// in-capsule data on a command that does not transfer to the controller
// (nvmet_rdma_map_sgl_inline).
func (q *queue) parseSGL(r *request, icdata []byte) nvme.Status {
	sqe := &r.req.SQE
	dir := commandDirection(sqe)
	r.req.Dir = dir
	if sqe.PSDT() != nvme.PSDTSGL {
		// Fabrics require SGLs (nvmet: flags & SGL_ALL must be METABUF).
		return nvme.StatusInvalidField.WithDNR()
	}
	sgl := sqe.SGL1()
	switch sgl.Type() {
	case nvme.SGLTypeKeyedDataBlock:
		st := sgl.Subtype()
		if st != nvme.SGLSubtypeAddress && st != nvme.SGLSubtypeInvalidate {
			return nvme.StatusSGLTypeInvalid.WithDNR()
		}
		n := sgl.Length()
		if n == 0 {
			return nvme.StatusSuccess // no data
		}
		if dir != nvme.DirHostToCtrl && dir != nvme.DirCtrlToHost {
			return nvme.StatusInvalidField.WithDNR()
		}
		if int64(n) > int64(q.l.cfg.MaxDataTransfer) {
			return nvme.StatusDataSGLLengthInvalid.WithDNR()
		}
		addr := sgl.Address()
		if addr > math.MaxUint64-uint64(n-1) {
			return nvme.StatusDataSGLLengthInvalid.WithDNR()
		}
		r.keyed = true
		r.length = n
		r.raddr = addr
		r.rkey = sgl.Key()
		if st == nvme.SGLSubtypeInvalidate {
			r.inv = true
		}
		return nvme.StatusSuccess
	case nvme.SGLTypeDataBlock:
		if sgl.Subtype() != nvme.SGLSubtypeOffset {
			return nvme.StatusSGLTypeInvalid.WithDNR()
		}
		if dir != nvme.DirHostToCtrl {
			return nvme.StatusInvalidField.WithDNR()
		}
		icd := min(len(icdata), q.params.icd)
		off, n, ok := sgl.InCapsuleSpan(icd)
		if !ok {
			return nvme.StatusSGLOffsetInvalid.WithDNR()
		}
		if n > 0 {
			r.req.Data = icdata[off : off+n : off+n]
			r.req.Length = uint32(n)
		}
		return nvme.StatusSuccess
	default:
		return nvme.StatusSGLTypeInvalid.WithDNR()
	}
}

// checkConnectQID enforces that a fabrics Connect names the queue the RDMA
// connection was negotiated for (CM private data qid): the queue's depth and
// in-capsule size were sized for that qid. The error is Connect Invalid
// Parameters with IATTR 0 / IPO = offset of the QID field in the SQE.
func (q *queue) checkConnectQID(r *request) (nvme.Status, uint32) {
	sqe := &r.req.SQE
	if !sqe.IsFabrics() || sqe.FCType() != nvme.FabricsConnect {
		return nvme.StatusSuccess, 0
	}
	if (nvme.ConnectCmd{SQE: sqe}).QID() != q.params.qid {
		const ipoQID = 42 // Connect SQE offset of QID
		return nvme.StatusConnectInvalidParam.WithDNR(), ipoQID
	}
	return nvme.StatusSuccess, 0
}

// shortCapsuleCID reads the CID of a capsule shorter than an SQE: bytes 3:2
// when at least 4 bytes arrived.
func shortCapsuleCID(b []byte) (uint16, bool) {
	if len(b) < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint16(b[2:]), true
}
