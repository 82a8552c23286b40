package initiator

import (
	"fmt"
	"sync"

	"github.com/rdmablk/rdmablk/nvme"
)

// submitter is the multiplexed API a blocking call wraps: Namespace or
// Session. submit always completes r on r.Done.
type submitter interface {
	submit(r *Request)
}

// waiter is a Request with its own completion channel, recycled through
// waiters so that a blocking call allocates nothing.
type waiter struct {
	r  Request
	ch chan *Request
}

var waiters = sync.Pool{New: func() any { return &waiter{ch: make(chan *Request, 1)} }}

// blocking runs one request through s and waits for it: the blocking API
// is this thin wrapper over the asynchronous one.
func blocking(s submitter, op IOOp, off int64, p []byte, length int64, fua bool) (int, error) {
	w := waiters.Get().(*waiter)
	r := &w.r
	r.Op, r.Off, r.Data, r.Len, r.FUA, r.Done, r.User = op, off, p, length, fua, w.ch, 0
	s.submit(r)
	<-w.ch
	n, err := r.N, r.Err
	r.Data, r.Err, r.err, r.sess = nil, nil, nil, nil
	waiters.Put(w)
	return n, err
}

// Submit starts r on this namespace's controller: its commands are spread
// over the I/O queues and r comes back on r.Done. Any goroutine, any
// number of them at once; it never blocks. A Namespace does not replay: a
// lost controller fails r with an error wrapping ErrControllerLost (use a
// Session for reconnect and replay). It returns ErrInvalid (and does not
// complete r) only when r is nil or has neither Done nor Notify.
func (ns *Namespace) Submit(r *Request) error {
	if r == nil || r.Done == nil && r.Notify == nil {
		return fmt.Errorf("%w: request without a Done channel or Notify", ErrInvalid)
	}
	ns.submit(r)
	return nil
}

func (ns *Namespace) submit(r *Request) {
	lba, blocks, err := r.start(ns.BlockSize())
	r.sess, r.nsid = nil, ns.nsid
	if err == nil {
		err = ns.check(r.Op, lba, blocks)
	}
	if err != nil {
		r.abort(err)
		return
	}
	if blocks > 0 {
		r.split(lba, blocks, maxBlocksPerCommand(r.Op, r.bs, ns.c.maxTransfer), ns.c, nil)
	}
	r.release()
}

// check refuses ranges beyond the namespace and operations the controller
// does not support.
func (ns *Namespace) check(op IOOp, lba, blocks uint64) error {
	switch op {
	case IOWriteZeroes:
		if ns.c.ident.ONCS&nvme.ONCSWriteZeroes == 0 {
			return fmt.Errorf("%w: %s (ONCS %#x)", ErrNotSupported, op, ns.c.ident.ONCS)
		}
	case IODeallocate:
		if ns.c.ident.ONCS&nvme.ONCSDSM == 0 {
			return fmt.Errorf("%w: %s (ONCS %#x)", ErrNotSupported, op, ns.c.ident.ONCS)
		}
	case IOFlush:
		return nil
	}
	if end := lba + blocks; end < lba || end > ns.Blocks() {
		return ns.outOfRange(op.String())
	}
	return nil
}
