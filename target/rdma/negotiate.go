package rdma

import (
	"errors"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// queueParams is the outcome of negotiating one connection.
type queueParams struct {
	qid     uint16 // queue ID from the CM private data (0 = admin)
	depth   int    // receive queue = hsqsize+1 command slots (CRQSIZE)
	sendQ   int    // send queue work requests
	rcqe    int    // receive CQ entries
	scqe    int    // send CQ entries
	ord     int    // RDMA READs we keep outstanding (InitiatorDepth)
	icd     int    // in-capsule data bytes accepted per command
	hrqsize int    // host receive queue size (informational)
}

// negotiate validates a connect request (NVMe-oF RDMA transport spec §3.2,
// Linux nvmet_rdma_parse_cm_connect_req) against the configuration and the
// device, and sizes the queue. p is the request as RDMA CM presents it to the
// passive side (responder resources and initiator depth already swapped). On failure it returns the CM reject status
// (nvme.CMReject*) to send.
//
// Differences from Linux nvmet-rdma (which checks only a zero-length private
// data, recfmt, and the admin hsqsize):
//   - private data shorter than 32 bytes is rejected (nvmet reads a short
//     buffer as if it were whole);
//   - qid 0xFFFF is rejected (no queue can have it; the core checks the qid
//     against the granted queue count at Connect time);
//   - hsqsize 0 (a one-entry queue) is rejected for admin and I/O queues (the
//     spec's minimum queue size is two entries), and an I/O hsqsize+1 above
//     MaxQueueDepth is rejected (nvmet has an "XXX" and no limit);
//   - hrqsize must be at least hsqsize+1 (one response per command must fit
//     in the host's receive queue) and at most the device's MaxQPWR (a
//     receive queue no work queue could hold is garbage); nvmet sizes its
//     send queue from hrqsize and fails with no-resources instead;
//   - a host offering no responder resources (IRD 0) is rejected with
//     CMRejectInvalidIRD: we could never RDMA READ its data (nvmet accepts
//     and fails every write later).
func negotiate(cfg *Config, attr verbs.DeviceAttr, p verbs.ConnParam) (queueParams, uint16) {
	var qp queueParams
	if len(p.PrivateData) < nvme.CMRequestSize {
		return qp, nvme.CMRejectInvalidPrivateDataLen
	}
	req, err := nvme.ParseCMRequest(p.PrivateData)
	if err != nil {
		if errors.Is(err, nvme.ErrBadRecfmt) {
			return qp, nvme.CMRejectInvalidRecfmt
		}
		return qp, nvme.CMRejectInvalidPrivateDataLen
	}
	if req.QID == 0xFFFF {
		return qp, nvme.CMRejectInvalidQID
	}
	qp.qid = req.QID
	maxDepth := cfg.MaxQueueDepth
	qp.icd = cfg.InCapsuleDataSize
	if req.QID == 0 {
		maxDepth = AdminQueueDepth
		qp.icd = 0
	}
	qp.depth = int(req.HSQSize) + 1
	if req.HSQSize == 0 || qp.depth > maxDepth {
		return qp, nvme.CMRejectInvalidHSQSize
	}
	if attr.MaxQPWR > 0 && qp.depth > attr.MaxQPWR {
		// The device cannot post one receive per command slot.
		return qp, nvme.CMRejectInvalidHSQSize
	}
	qp.hrqsize = int(req.HRQSize)
	if qp.hrqsize < qp.depth || (attr.MaxQPWR > 0 && qp.hrqsize > attr.MaxQPWR) {
		return qp, nvme.CMRejectInvalidHRQSize
	}
	// RDMA CM presents the request from the passive side's point of view:
	// p.InitiatorDepth is the host's responder resources (its IRD), i.e. the
	// RDMA READs we may keep outstanding (nvmet: min(initiator_depth,
	// max_qp_init_rd_atom)).
	if p.InitiatorDepth == 0 {
		return qp, nvme.CMRejectInvalidIRD
	}
	if attr.MaxQPInitRdAtom <= 0 {
		return qp, nvme.CMRejectNoResources
	}
	qp.ord = min(int(p.InitiatorDepth), attr.MaxQPInitRdAtom)
	// One CQE SEND plus one data WR (READ or WRITE) per command slot. A
	// smaller device queue only throttles: send-queue slots are counted
	// credits, so the transport never overruns it.
	qp.sendQ = 2 * qp.depth
	if attr.MaxQPWR > 0 && qp.sendQ > attr.MaxQPWR {
		qp.sendQ = attr.MaxQPWR
	}
	// Receives and sends complete on CQs of their own (see queue.scq):
	// every posted receive completes once, and every send WR — signaled,
	// or unsignaled and failed or flushed — occupies a send-queue slot
	// until its completion is polled: neither CQ can overrun.
	qp.rcqe, qp.scqe = qp.depth, qp.sendQ
	if attr.MaxCQE > 0 && max(qp.rcqe, qp.scqe) > attr.MaxCQE {
		return qp, nvme.CMRejectNoResources
	}
	return qp, 0
}

// rejectData encodes the 4-byte reject private data for status.
func rejectData(status uint16) []byte {
	b := make([]byte, nvme.CMRejectSize)
	r := nvme.CMReject{Recfmt: 0, Status: status}
	r.Marshal(b)
	return b
}

// acceptParam builds the accept parameters (nvmet_rdma_cm_accept): CRQSIZE
// = the receive queue, InitiatorDepth = our ORD, no responder resources (we
// serve no RDMA READs), RNR retry 7 (infinite) and flow control.
func acceptParam(qp queueParams) verbs.ConnParam {
	b := make([]byte, nvme.CMAcceptSize)
	a := nvme.CMAccept{Recfmt: 0, CRQSize: uint16(qp.depth)}
	a.Marshal(b)
	return verbs.ConnParam{
		PrivateData:        b,
		ResponderResources: 0,
		InitiatorDepth:     uint8(qp.ord),
		RetryCount:         7,
		RNRRetryCount:      7,
		FlowControl:        true,
	}
}
