package initiator

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrQueueFull: Submit found no free command slot (depth commands are
	// outstanding or completed but not yet returned by Poll).
	ErrQueueFull = errors.New("initiator: queue full")
	// ErrClosed: the controller was closed by Close.
	ErrClosed = errors.New("initiator: controller closed")
	// ErrControllerLost: the controller failed (connection lost, transport
	// error, protocol violation, keep-alive failure). Outstanding and later
	// IOs fail with it.
	ErrControllerLost = errors.New("initiator: controller lost")
	// ErrUnaligned: an offset or length is not a multiple of the block size
	// (or is negative).
	ErrUnaligned = errors.New("initiator: offset or length not a multiple of the block size")
	// ErrInvalid: a malformed IO or argument (unknown operation, NSID or
	// buffer, transfer larger than the queue's MaxTransfer, zero blocks...).
	ErrInvalid = errors.New("initiator: invalid argument")
	// ErrIdle: Wait was called with nothing outstanding and nothing to reap.
	ErrIdle = errors.New("initiator: nothing outstanding")
	// ErrNotSupported: the controller does not support the operation (ONCS
	// lacks Write Zeroes or Dataset Management, not an I/O controller...).
	ErrNotSupported = errors.New("initiator: not supported by controller")
	// ErrNoNamespace: no active namespace with that NSID.
	ErrNoNamespace = errors.New("initiator: no such namespace")
	// ErrProtocol: the target violated the protocol (bad CQE, unknown CID,
	// malformed data). It is wrapped together with ErrControllerLost when
	// it loses the controller.
	ErrProtocol = errors.New("initiator: protocol error")
	// ErrTimeout: the controller did not become ready (CSTS.RDY) or finish
	// shutting down (CSTS.SHST) in time.
	ErrTimeout = errors.New("initiator: controller timeout")
)

// StatusError is an NVMe command that completed with a non-success status.
// Unwrap yields Status.Code() (an nvme.Status, which implements error), so
// errors.Is(err, nvme.StatusLBAOutOfRange) matches whatever the DNR and
// More bits were, and errors.As(err, &st) extracts the code.
type StatusError struct {
	// Op names the command ("connect", "identify controller", "read"...).
	Op string
	// Status is the full status field of the CQE (with DNR/More/CRD).
	Status nvme.Status
}

func (e *StatusError) Error() string {
	return "initiator: " + e.Op + ": " + e.Status.String()
}

// Unwrap returns the status code without flag bits.
func (e *StatusError) Unwrap() error { return e.Status.Code() }

// statusErr returns nil for success and a *StatusError otherwise.
func statusErr(op string, st nvme.Status) error {
	if st.OK() {
		return nil
	}
	return &StatusError{Op: op, Status: st}
}

// ConnectRejectedError is an RDMA CM connect request the target rejected
// with NVMe-oF RDMA reject private data (NVMe-oF RDMA binding, rdma_cm
// reject: recfmt + sts).
type ConnectRejectedError struct {
	// QID is the queue that was being connected.
	QID uint16
	// Status is the sts field (nvme.CMReject* values).
	Status uint16
}

var cmRejectNames = map[uint16]string{
	nvme.CMRejectInvalidPrivateDataLen: "invalid private data length",
	nvme.CMRejectInvalidRecfmt:         "invalid record format",
	nvme.CMRejectInvalidQID:            "invalid queue ID",
	nvme.CMRejectInvalidHSQSize:        "invalid host send queue size (HSQSIZE)",
	nvme.CMRejectInvalidHRQSize:        "invalid host receive queue size (HRQSIZE)",
	nvme.CMRejectNoResources:           "no resources",
	nvme.CMRejectInvalidIRD:            "invalid IRD",
	nvme.CMRejectInvalidORD:            "invalid ORD",
}

func (e *ConnectRejectedError) Error() string {
	name, ok := cmRejectNames[e.Status]
	if !ok {
		name = "unknown reason"
	}
	return fmt.Sprintf("initiator: queue %d: connection rejected by target: %s (sts %d)", e.QID, name, e.Status)
}

// rejectError turns a verbs connect error into a *ConnectRejectedError
// when it is a consumer reject with decodable NVMe-oF private data; any
// other error is returned unchanged.
func rejectError(qid uint16, err error) error {
	var re *verbs.RejectError
	if !errors.As(err, &re) || len(re.PrivateData) == 0 {
		return err
	}
	rej, perr := nvme.ParseCMReject(re.PrivateData)
	if perr != nil {
		return fmt.Errorf("initiator: queue %d: connection rejected with malformed private data (% x): %w", qid, re.PrivateData, err)
	}
	return &ConnectRejectedError{QID: qid, Status: rej.Status}
}

// ConnectError is a fabrics Connect command the controller refused. Its
// message names the cause a person can act on: the subsystem NQN that the
// target does not have, the host NQN it does not allow, or the field it
// called invalid (IPO/IATTR, NVMe-oF 1.1 §3.3). errors.Is(err,
// nvme.StatusConnectInvalidHost) and errors.As(err, **StatusError) work.
type ConnectError struct {
	Addr    string // target address
	SubNQN  string
	HostNQN string // the host NQN presented
	QID     uint16 // 0: admin queue
	Status  nvme.Status
	// Param is what a Connect Invalid Parameters / Invalid Host
	// completion blamed.
	Param nvme.ConnectInvalidParam
}

func (e *ConnectError) Error() string {
	switch e.Status.Code() {
	case nvme.StatusConnectInvalidHost:
		return fmt.Sprintf("initiator: %s at %s does not allow host NQN %q (present another with --hostnqn, or allow this one on the target)",
			e.SubNQN, e.Addr, e.HostNQN)
	case nvme.StatusConnectInvalidParam:
		if e.Param.InData {
			switch e.Param.Offset {
			case nvme.ConnectDataOffsetSubNQN:
				return fmt.Sprintf("initiator: no subsystem NQN %q at %s", e.SubNQN, e.Addr)
			case nvme.ConnectDataOffsetHostNQN:
				return fmt.Sprintf("initiator: %s at %s refused host NQN %q as invalid (set it with --hostnqn)",
					e.SubNQN, e.Addr, e.HostNQN)
			case nvme.ConnectDataOffsetCNTLID, nvme.ConnectDataOffsetHostID:
				return fmt.Sprintf("initiator: %s at %s: I/O queue %d: the controller is gone or belongs to another host (connect data byte %d)",
					e.SubNQN, e.Addr, e.QID, e.Param.Offset)
			}
			return fmt.Sprintf("initiator: %s at %s: queue %d: connect refused: invalid connect data at byte %d",
				e.SubNQN, e.Addr, e.QID, e.Param.Offset)
		}
		return fmt.Sprintf("initiator: %s at %s: queue %d: connect refused: invalid command field at byte %d (queue ID or size)",
			e.SubNQN, e.Addr, e.QID, e.Param.Offset)
	}
	return fmt.Sprintf("initiator: %s at %s: connect queue %d: %s", e.SubNQN, e.Addr, e.QID, e.Status)
}

// Unwrap returns the status as a *StatusError.
func (e *ConnectError) Unwrap() error { return &StatusError{Op: "connect", Status: e.Status} }

// RefusedError is a connection refused below NVMe: no listener on that
// address and port (TCP RST, RDMA CM reject without NVMe-oF private
// data; over NVMe/TCP a refused TCP connection). Unwrap yields the cause
// (a *verbs.RejectError, or the dial error wrapping ECONNREFUSED).
type RefusedError struct {
	Addr string
	Err  error
}

func (e *RefusedError) Error() string {
	return "initiator: connection refused: no NVMe-oF listener at " + e.Addr
}

func (e *RefusedError) Unwrap() error { return e.Err }

// refusedError returns a *RefusedError when err is a reject without
// NVMe-oF private data, else nil.
func refusedError(addr string, err error) error {
	var re *verbs.RejectError
	if errors.As(err, &re) && !re.Consumer && len(re.PrivateData) == 0 {
		return &RefusedError{Addr: addr, Err: err}
	}
	return nil
}
