package attach

import (
	"sync/atomic"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nbd"
)

// nbdBackend is a Session as an NBD export's backend. The embedded
// Session supplies the blocking methods and every optional capability
// (nbd.Flusher, FUAWriter, Trimmer, Zeroer); OpenQueue makes it an
// nbd.AsyncBackend, so each connection's requests go to Session.Submit
// from the connection's reader without a goroutine or a wait per request.
type nbdBackend struct {
	*initiator.Session
	conns *atomic.Uint32 // connections opened: the next one's I/O queue
}

func newNBDBackend(s *initiator.Session) nbdBackend {
	return nbdBackend{Session: s, conns: new(atomic.Uint32)}
}

var (
	_ nbd.AsyncBackend   = nbdBackend{}
	_ nbd.Kicker         = (*nbdQueue)(nil)
	_ nbd.Poller         = (*nbdQueue)(nil)
	_ initiator.Notifier = (*nbdQueue)(nil)
)

// OpenQueue returns one connection's queue: a slot table of depth
// initiator Requests (no allocation per request), an initiator Submitter
// on the connection's own I/O queue (connections take the queues in
// turn: with one connection per queue, as rdmablk connect makes them,
// each has its own), and one completion goroutine that receives the
// Requests from Done and completes the NBD requests (which writes their
// replies on that goroutine).
func (b nbdBackend) OpenQueue(depth int) (nbd.AsyncQueue, error) {
	n := 1
	if l, ok := b.Limits(); ok && l.Queues > 0 {
		n = l.Queues
	}
	sub, err := b.Submitter(int((b.conns.Add(1) - 1) % uint32(n)))
	if err != nil {
		return nil, err
	}
	q := &nbdQueue{
		sub:     sub,
		slots:   make([]nbdSlot, depth),
		done:    make(chan *initiator.Request, depth), // room for every request in flight
		stopped: make(chan struct{}),
	}
	go q.complete()
	return q, nil
}

// nbdQueue is an nbd.AsyncQueue over Session.Submit.
type nbdQueue struct {
	sub     *initiator.Submitter // the reader goroutine's
	slots   []nbdSlot            // indexed by nbd.Request.Slot (= initiator.Request.User)
	done    chan *initiator.Request
	stopped chan struct{} // closed when complete returned
	// polled: the connection's poll loop reaps the queue itself
	// (SetWaker); requests then complete through RequestDone, mostly on
	// the loop's goroutine inside Kick or Arm, and Done is not used.
	polled bool
}

// nbdSlot is the state of one in-flight request. The connection's reader
// fills it in Submit; the completion goroutine empties it before it
// completes the NBD request (which frees the slot for the reader).
type nbdSlot struct {
	ir initiator.Request
	nr *nbd.Request
}

// opOf maps nbd operations to the initiator's.
var opOf = [...]initiator.IOOp{
	nbd.OpRead:        initiator.IORead,
	nbd.OpWrite:       initiator.IOWrite,
	nbd.OpFlush:       initiator.IOFlush,
	nbd.OpWriteZeroes: initiator.IOWriteZeroes,
	nbd.OpDeallocate:  initiator.IODeallocate,
}

// Submit starts r on the session; its commands wait for Kick. It never
// blocks. Called by the connection's reader goroutine only.
func (q *nbdQueue) Submit(r *nbd.Request) {
	s := &q.slots[r.Slot]
	s.nr = r
	ir := &s.ir
	ir.Op, ir.Off, ir.Data, ir.Len, ir.FUA = initiator.IOOp(0), r.Off, r.Data, r.Len, r.FUA
	if int(r.Op) < len(opOf) {
		ir.Op = opOf[r.Op] // 0 for an unknown op: the session rejects it with ErrInvalid
	}
	ir.Done, ir.Notify, ir.User = q.done, nil, uint64(r.Slot)
	if q.polled {
		ir.Done, ir.Notify = nil, q
	}
	if err := q.sub.Submit(ir); err != nil {
		s.nr, ir.Data = nil, nil
		r.Complete(err)
	}
}

// Kick implements nbd.Kicker: the reader goroutine, at the end of a burst
// of requests, issues them on the initiator queue itself (one post, no
// hand-off to the queue's goroutine); completions it finishes there go
// to Done like the others.
func (q *nbdQueue) Kick() { q.sub.Flush() }

// SetWaker implements nbd.Poller: the connection's loop waits for the
// initiator queue's completions itself (initiator.Submitter.SetWaker).
func (q *nbdQueue) SetWaker(wake func()) {
	q.sub.SetWaker(wake)
	q.polled = true
}

// Arm implements nbd.Poller (initiator.Submitter.Arm).
func (q *nbdQueue) Arm(signalled bool) (int, uint64) { return q.sub.Arm(signalled) }

// Release implements nbd.Poller (initiator.Submitter.Release).
func (q *nbdQueue) Release() { q.sub.Release() }

// RequestDone implements initiator.Notifier for a polled queue: it
// completes the NBD request, which queues its reply for the loop (on the
// loop's goroutine when it reaped the request, else from the initiator's
// goroutine, which then wakes the loop). It does not block.
func (q *nbdQueue) RequestDone(ir *initiator.Request) {
	r, err := q.take(ir)
	r.Complete(err)
}

// take empties the slot of a completed initiator Request and returns its
// NBD request and result.
func (q *nbdQueue) take(ir *initiator.Request) (*nbd.Request, error) {
	s := &q.slots[ir.User]
	r, err := s.nr, ir.Err
	s.nr, ir.Data = nil, nil
	return r, err
}

// complete runs until Close: it completes each NBD request whose
// initiator Request came back (an initiator error becomes the errno the
// nbd package maps it to: EIO unless it is a syscall.Errno it knows).
// Requests that came back together are completed as one run
// (CompleteMore ... Complete), so their replies share one write.
func (q *nbdQueue) complete() {
	defer close(q.stopped)
	for ir := range q.done {
		for {
			r, err := q.take(ir)
			if len(q.done) == 0 {
				r.Complete(err)
				break
			}
			r.CompleteMore(err)
			ir = <-q.done // there is one: this goroutine is the only receiver
		}
	}
}

// Close stops the completion goroutine; the connection calls it after
// every request completed.
func (q *nbdQueue) Close() {
	close(q.done)
	<-q.stopped
}
