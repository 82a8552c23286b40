package initiator

import (
	"context"
	"errors"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// WithTestHooks returns o with background-goroutine observers installed
// (for the external end-to-end tests). rescanned is called after each
// namespace rescan caused by an asynchronous event, keptAlive after each
// Keep Alive; either may be nil.
func WithTestHooks(o Options, rescanned, keptAlive func(error)) Options {
	o.hooks = &testHooks{rescanned: rescanned, keptAlive: keptAlive}
	return o
}

// QueuePairs returns the RDMA QPs of c's I/O queues (for fault injection).
func QueuePairs(c *Controller) []verbs.QueuePair {
	var out []verbs.QueuePair
	for _, q := range c.queues {
		out = append(out, q.q.qp)
	}
	return out
}

// ConnIDs returns the connections of every queue of c, admin first.
func ConnIDs(c *Controller) []verbs.ConnID {
	c.conns.Lock()
	defer c.conns.Unlock()
	var out []verbs.ConnID
	for _, q := range c.qpairs {
		out = append(out, q.id)
	}
	return out
}

// SessionController returns the live controller of path i, or nil.
func SessionController(s *Session, i int) *Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paths[i].ctrl
}

// LoseAndKeepAlive marks c lost, waits until its background goroutines
// (admin poller included) have finished, then issues n Keep Alive
// commands, each of which must fail: it reports the first success.
func LoseAndKeepAlive(c *Controller, n int) error {
	c.lose(errors.New("test: connection lost"))
	c.bg.Wait()
	for range n { // exec's first select races the semaphore against Done
		if _, err := c.admin.exec(context.Background(), func(s *nvme.SQE) { s.SetKeepAlive() }, nil, 0, noData); err == nil {
			return errors.New("admin command succeeded on a lost controller")
		}
	}
	return nil
}
