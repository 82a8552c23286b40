package initiator

import "github.com/rdmablk/rdmablk/nvme"

// Limits are the capabilities of the path a Session uses now: what a
// frontend (ublk, NBD) advertises to the block layer.
type Limits struct {
	// MaxTransfer is the largest data transfer of one command in bytes
	// (MDTS, capped by Options; Controller.MaxTransfer).
	MaxTransfer int
	// Queues and QueueDepth are the controller's I/O queues and their
	// depth.
	Queues, QueueDepth int
	// ONCS is Identify Controller's Optional NVM Command Support
	// (nvme.ONCSDSM, nvme.ONCSWriteZeroes, …).
	ONCS uint16
	// VolatileCache: Identify Controller VWC bit 0 — Flush is needed for
	// durability.
	VolatileCache bool
}

// Limits returns the current path's limits; false while no path is
// usable. Any goroutine; it does not block.
func (s *Session) Limits() (Limits, bool) {
	e := s.table.Load().best
	if e == nil {
		return Limits{}, false
	}
	c := e.ctrl
	id := c.Identify()
	l := Limits{MaxTransfer: c.MaxTransfer(), Queues: len(c.queues), ONCS: id.ONCS, VolatileCache: id.VWC&nvme.VWCPresent != 0}
	if len(c.queues) > 0 {
		l.QueueDepth = c.queues[0].Depth()
	}
	return l, true
}
