package tcp

import (
	"github.com/rdmablk/rdmablk/nvme"
)

// parseSGL validates SGL1 of the command in s against the in-capsule data
// received with it (icd bytes, already in s.buf[:icd]) and the queue's
// limits, and fills s.req.Dir, Length and Data. It reports whether the
// host must still send the data (R2T). NVMe/TCP hosts describe data with
// one of two descriptors (TCP §3.3, Linux nvme_tcp_set_sg_*):
//
//   - in-capsule data: a Data Block descriptor, subtype Offset, whose
//     offset and length must lie within the data received in the capsule
//     (else SGL Offset Invalid, as nvmet); only for host-to-controller
//     commands (else Invalid Field);
//   - everything else: a Transport Data Block descriptor (type 5,
//     subtype Ah) with the length (0: no data); a length above
//     MaxDataTransfer — or above 8 KiB before the queue's Fabrics
//     Connect — is Data SGL Length Invalid; in-capsule data sent with it
//     is Invalid Field.
//
// Other descriptor types are SGL Descriptor Type Invalid; PSDT other than
// SGL is Invalid Field (fabrics require SGLs).
func (c *conn) parseSGL(s *slot, icd int) (st nvme.Status, needData bool) {
	sqe := &s.req.SQE
	dir := commandDirection(sqe)
	s.req.Dir = dir
	if sqe.PSDT() != nvme.PSDTSGL {
		return nvme.StatusInvalidField.WithDNR(), false
	}
	sgl := sqe.SGL1()
	switch {
	case sgl.Type() == nvme.SGLTypeDataBlock && sgl.Subtype() == nvme.SGLSubtypeOffset:
		if dir != nvme.DirHostToCtrl {
			return nvme.StatusInvalidField.WithDNR(), false
		}
		off, n, ok := sgl.InCapsuleSpan(icd)
		if !ok {
			return nvme.StatusSGLOffsetInvalid.WithDNR(), false
		}
		if n > 0 {
			s.req.Data = s.buf[off : off+n : off+n]
			s.req.Length = uint32(n)
		}
		return nvme.StatusSuccess, false
	case sgl.Type() == nvme.SGLTypeTransportBlock && sgl.Subtype() == nvme.SGLSubtypeTransport:
		if icd > 0 {
			return nvme.StatusInvalidField.WithDNR(), false
		}
		n := sgl.Length()
		if n == 0 {
			return nvme.StatusSuccess, false
		}
		if dir != nvme.DirHostToCtrl && dir != nvme.DirCtrlToHost {
			return nvme.StatusInvalidField.WithDNR(), false
		}
		limit := c.l.cfg.MaxDataTransfer
		if !c.connected {
			limit = preConnectDataLimit
		}
		if int64(n) > int64(limit) {
			return nvme.StatusDataSGLLengthInvalid.WithDNR(), false
		}
		buf := s.ensure(int(n), c.l.cfg.MaxDataTransfer)
		s.req.Data = buf[:n:n]
		s.req.Length = n
		return nvme.StatusSuccess, dir == nvme.DirHostToCtrl
	default:
		return nvme.StatusSGLTypeInvalid.WithDNR(), false
	}
}
