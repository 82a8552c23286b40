package rdma

import "github.com/rdmablk/rdmablk/target"

// coreTarget is the part of *target.Target the transport calls. Tests swap
// in fake cores through Config.core.
type coreTarget interface {
	AddPort(p target.Port) error
	RemovePort(id uint16) error
	NewQueue(portID uint16, conn target.QueueConn, depth int) (coreQueue, error)
}

// coreQueue is the part of *target.Queue the transport calls.
type coreQueue interface {
	// Execute runs r; true means the CQE is final now, false means
	// QueueConn.Complete(r) follows exactly once, from any goroutine.
	Execute(r *target.Request) bool
	// Destroy is called once, after the connection ended; requests still
	// executing are completed through QueueConn.Complete afterwards.
	Destroy()
	QID() uint16
	// Consume advances the SQ head for a capsule the transport answered
	// itself (never passed to Execute) and returns the new SQHD.
	Consume() uint16
}

// batcher is implemented by cores that can hold back backend I/O during
// a burst of Execute calls (*target.Queue: BeginBatch / EndBatch).
type batcher interface {
	BeginBatch()
	EndBatch()
}

// dataRegioner is implemented by cores that can hand the queue's
// registered memory to backends as pre-registered I/O buffers
// (*target.Queue: SetDataRegion, io_uring fixed buffers).
type dataRegioner interface {
	SetDataRegion(mem []byte)
}

// targetCore adapts *target.Target to coreTarget.
type targetCore struct{ t *target.Target }

func (c targetCore) AddPort(p target.Port) error { return c.t.AddPort(p) }
func (c targetCore) RemovePort(id uint16) error  { return c.t.RemovePort(id) }
func (c targetCore) NewQueue(portID uint16, conn target.QueueConn, depth int) (coreQueue, error) {
	q, err := c.t.NewQueue(portID, conn, depth)
	if err != nil {
		return nil, err
	}
	return q, nil
}
