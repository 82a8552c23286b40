package nvme

import "encoding/binary"

// NVMe-oF RDMA transport binding: RDMA CM private data (NVMe-oF spec §7.3
// RDMA transport; Linux include/linux/nvme-rdma.h layouts).

// Private data sizes.
const (
	CMRequestSize = 32
	CMAcceptSize  = 32
	CMRejectSize  = 4
)

// CM reject status values (the sts field of the reject private data).
const (
	CMRejectInvalidPrivateDataLen = 1
	CMRejectInvalidRecfmt         = 2
	CMRejectInvalidQID            = 3
	CMRejectInvalidHSQSize        = 4
	CMRejectInvalidHRQSize        = 5
	CMRejectNoResources           = 6
	CMRejectInvalidIRD            = 7
	CMRejectInvalidORD            = 8
)

// CMRequest is the RDMA_CM_REQUEST private data sent by the host.
type CMRequest struct {
	Recfmt  uint16
	QID     uint16
	HRQSize uint16 // host receive queue size
	HSQSize uint16 // host send queue size, 0's based
	CNTLID  uint16 // reserved in the Linux layout; 0xFFFF or 0
}

// ParseCMRequest decodes request private data. Rdma_cm may deliver more
// bytes than were sent (zero padded), so only a shorter input is an error.
func ParseCMRequest(b []byte) (CMRequest, error) {
	var r CMRequest
	if len(b) < CMRequestSize {
		return r, ErrShort
	}
	r.Recfmt = binary.LittleEndian.Uint16(b[0:])
	r.QID = binary.LittleEndian.Uint16(b[2:])
	r.HRQSize = binary.LittleEndian.Uint16(b[4:])
	r.HSQSize = binary.LittleEndian.Uint16(b[6:])
	r.CNTLID = binary.LittleEndian.Uint16(b[8:])
	if r.Recfmt != 0 {
		return r, ErrBadRecfmt
	}
	return r, nil
}

// Marshal encodes r into b[:CMRequestSize], zeroing the reserved bytes.
// It returns ErrShort, writing nothing, when len(b) < CMRequestSize.
func (r *CMRequest) Marshal(b []byte) error {
	if len(b) < CMRequestSize {
		return ErrShort
	}
	clear(b[:CMRequestSize])
	binary.LittleEndian.PutUint16(b[0:], r.Recfmt)
	binary.LittleEndian.PutUint16(b[2:], r.QID)
	binary.LittleEndian.PutUint16(b[4:], r.HRQSize)
	binary.LittleEndian.PutUint16(b[6:], r.HSQSize)
	binary.LittleEndian.PutUint16(b[8:], r.CNTLID)
	return nil
}

// CMAccept is the RDMA_CM accept private data sent by the controller.
type CMAccept struct {
	Recfmt  uint16
	CRQSize uint16 // controller receive queue size
}

// ParseCMAccept decodes accept private data. Only the first 4 bytes carry
// fields, so any input of at least 4 bytes is accepted (the 28 reserved
// bytes are ignored).
func ParseCMAccept(b []byte) (CMAccept, error) {
	var a CMAccept
	if len(b) < 4 {
		return a, ErrShort
	}
	a.Recfmt = binary.LittleEndian.Uint16(b[0:])
	a.CRQSize = binary.LittleEndian.Uint16(b[2:])
	if a.Recfmt != 0 {
		return a, ErrBadRecfmt
	}
	return a, nil
}

// Marshal encodes a into b[:CMAcceptSize], zeroing the reserved bytes. It
// returns ErrShort, writing nothing, when len(b) < CMAcceptSize.
func (a *CMAccept) Marshal(b []byte) error {
	if len(b) < CMAcceptSize {
		return ErrShort
	}
	clear(b[:CMAcceptSize])
	binary.LittleEndian.PutUint16(b[0:], a.Recfmt)
	binary.LittleEndian.PutUint16(b[2:], a.CRQSize)
	return nil
}

// CMReject is the RDMA_CM reject private data sent by the controller.
type CMReject struct {
	Recfmt uint16
	Status uint16 // CMReject* value
}

// ParseCMReject decodes reject private data.
func ParseCMReject(b []byte) (CMReject, error) {
	var r CMReject
	if len(b) < CMRejectSize {
		return r, ErrShort
	}
	r.Recfmt = binary.LittleEndian.Uint16(b[0:])
	r.Status = binary.LittleEndian.Uint16(b[2:])
	return r, nil
}

// Marshal encodes r into b[:CMRejectSize]. It returns ErrShort, writing
// nothing, when len(b) < CMRejectSize.
func (r *CMReject) Marshal(b []byte) error {
	if len(b) < CMRejectSize {
		return ErrShort
	}
	binary.LittleEndian.PutUint16(b[0:], r.Recfmt)
	binary.LittleEndian.PutUint16(b[2:], r.Status)
	return nil
}
