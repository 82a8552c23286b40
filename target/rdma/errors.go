package rdma

import "errors"

// Sentinel errors of the control path.
var (
	// ErrInvalidConfig: a Config field is out of range.
	ErrInvalidConfig = errors.New("rdma: invalid config")
	// ErrClosed: the Listener is closed.
	ErrClosed = errors.New("rdma: listener closed")
)

// errShortCapsule: a capsule too short to carry a CID (queue-fatal).
var errShortCapsule = errors.New("rdma: capsule shorter than 4 bytes")

// errDrainTimeout: a queue did not drain within Config.DrainTimeout.
var errDrainTimeout = errors.New("rdma: drain timed out")

// errNoGrowth: a queue may not register more data buffers now (all
// registered, a registration failed, or Config.MaxDataBufferBytes reached).
var errNoGrowth = errors.New("rdma: no more data buffers")
