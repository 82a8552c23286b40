package target

import "github.com/rdmablk/rdmablk/nvme"

// execAdmin dispatches an admin command of an I/O controller (queue 0,
// controller enabled).
func (q *Queue) execAdmin(r *Request, c *Controller) bool {
	switch r.SQE.Opcode() {
	case nvme.AdminIdentify:
		return q.completeInline(r, c.identify(r))
	case nvme.AdminGetLogPage:
		return q.completeInline(r, c.getLogPage(r))
	case nvme.AdminSetFeatures:
		return q.completeInline(r, c.setFeatures(r))
	case nvme.AdminGetFeatures:
		return q.completeInline(r, c.getFeatures(r))
	case nvme.AdminAsyncEvent:
		st, done := c.asyncEventRequest(r)
		if !done {
			return false
		}
		return q.completeInline(r, st)
	case nvme.AdminKeepAlive:
		// Execute already recorded the traffic.
		return q.completeInline(r, nvme.StatusSuccess)
	case nvme.AdminAbort:
		// Commands here are never aborted: DW0 bit 0 = 1, "not aborted".
		r.CQE.SetDW0(1)
		return q.completeInline(r, nvme.StatusSuccess)
	default:
		return q.completeInline(r, nvme.StatusInvalidOpcode.WithDNR())
	}
}

// execDiscoveryAdmin dispatches an admin command of a discovery controller:
// the subset a discovery controller supports (NVMe-oF 1.1 §5).
func (q *Queue) execDiscoveryAdmin(r *Request, c *Controller) bool {
	switch r.SQE.Opcode() {
	case nvme.AdminIdentify:
		if (nvme.IdentifyCmd{SQE: &r.SQE}).CNS() != nvme.CNSController {
			return q.completeInline(r, nvme.StatusInvalidField.WithDNR())
		}
		return q.completeInline(r, c.identify(r))
	case nvme.AdminGetLogPage:
		return q.completeInline(r, c.getLogPage(r))
	case nvme.AdminSetFeatures:
		return q.completeInline(r, c.setFeatures(r))
	case nvme.AdminGetFeatures:
		return q.completeInline(r, c.getFeatures(r))
	case nvme.AdminAsyncEvent:
		st, done := c.asyncEventRequest(r)
		if !done {
			return false
		}
		return q.completeInline(r, st)
	case nvme.AdminKeepAlive:
		return q.completeInline(r, nvme.StatusSuccess)
	default:
		return q.completeInline(r, nvme.StatusInvalidOpcode.WithDNR())
	}
}

// dataIn returns the buffer a controller-to-host admin command of exactly
// n bytes fills (nvmet_check_transfer_len: the SGL length must match the
// command's own length).
func dataIn(r *Request, n uint64) ([]byte, nvme.Status) {
	if r.Dir != nvme.DirCtrlToHost || uint64(r.Length) != n || uint64(len(r.Data)) < n {
		return nil, nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	return r.Data[:n], nvme.StatusSuccess
}
