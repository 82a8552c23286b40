package tcp

import "github.com/rdmablk/rdmablk/target"

// Core is the part of *target.Target the binding uses: ports at Listen
// and Close, a queue per connection after its ICReq. Control path; any
// goroutine.
type Core interface {
	AddPort(p target.Port) error
	RemovePort(id uint16) error
	NewQueue(portID uint16, conn target.QueueConn, depth int) (*target.Queue, error)
}
