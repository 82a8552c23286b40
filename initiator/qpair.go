package initiator

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// qpair is one NVMe queue as the host sees it, whatever carries it: a
// table of command slots (CIDs), the completion bookkeeping, and the
// queue's wire (wire.go) — an RDMA RC queue pair (wire_rdma.go) or an
// NVMe/TCP connection (wire_tcp.go) — that moves capsules and data.
//
// A qpair has no lock. Its owner serialises every method: the goroutine
// that owns the IOQueue, or the admin queue's mutex. The wire calls back
// into it (sendDone, response) only from those methods (flush, poll).
type qpair struct {
	qid   uint16
	depth int // usable command slots
	w     wire

	slots    []slot
	free     []uint16 // stack of free slot indices
	slotBits int      // CID = gen<<slotBits | slot index
	slotMask uint16

	busy int   // slots allocated
	err  error // first failure; the qpair is dead once set

	// onComplete is called (by poll, on the owner's goroutine) when a
	// command has both its capsule sent and its response. It must not
	// block and must not call back into the qpair except release.
	onComplete func(idx uint16)
	// onFail is called once, with the first failure.
	onFail func(error)
}

// slot is the state of one command identifier.
type slot struct {
	gen   uint16
	busy  bool // allocated; CID valid
	sent  bool // capsule sent (RDMA: SEND completion seen)
	resp  bool // response received
	done  bool // onComplete called or failed; waiting for release
	cqe   nvme.CQE
	io    *IO
	cmd   *adminCmd
	start time.Time
}

// initSlots allocates the slot table for depth commands.
func (q *qpair) initSlots(depth int) {
	q.depth = depth
	q.slotBits = bits.Len(uint(depth - 1))
	q.slotMask = uint16(1<<q.slotBits - 1)
	q.slots = make([]slot, depth)
	q.free = make([]uint16, 0, depth)
	for i := depth - 1; i >= 0; i-- {
		q.free = append(q.free, uint16(i))
	}
}

// limit reduces the usable command slots to n (< depth): the remaining
// slots are never handed out.
func (q *qpair) limit(n int) {
	kept := q.free[:0]
	for _, i := range q.free {
		if int(i) < n {
			kept = append(kept, i)
		}
	}
	q.free = kept
	q.depth = n
}

// sqe returns the SQE of slot i (in the wire's memory).
func (q *qpair) sqe(i uint16) *nvme.SQE { return q.w.sqe(i) }

// dsmArea returns the Dataset Management range area of slot i.
func (q *qpair) dsmArea(i uint16) []byte { return q.w.dsmArea(i) }

// cid is the command identifier of slot i in its current generation.
func (q *qpair) cid(i uint16) uint16 {
	return q.slots[i].gen<<q.slotBits | i
}

// alloc takes a free slot, starts a new CID generation and returns its
// zeroed SQE with the CID and PSDT (SGL) already set.
func (q *qpair) alloc() (uint16, *nvme.SQE, bool) {
	if len(q.free) == 0 {
		return 0, nil, false
	}
	i := q.free[len(q.free)-1]
	q.free = q.free[:len(q.free)-1]
	s := &q.slots[i]
	s.gen++
	if q.slotBits >= 16 {
		s.gen = 0
	} else {
		s.gen &= 1<<(16-q.slotBits) - 1
	}
	s.busy, s.sent, s.resp, s.done = true, false, false, false
	q.busy++
	e := q.sqe(i)
	*e = nvme.SQE{}
	e.SetCID(q.cid(i))
	e.SetPSDT(nvme.PSDTSGL)
	return i, e, true
}

// release frees slot i for a new command.
func (q *qpair) release(i uint16) {
	s := &q.slots[i]
	if !s.busy {
		return
	}
	s.busy, s.io, s.cmd = false, nil, nil
	q.busy--
	q.free = append(q.free, i)
}

// setData describes the command's data in SGL1 of slot i's SQE e: the
// first n bytes of b, or with b nil the slot's DSM range area; n 0: no
// data. toCtrl is the direction (host to controller); capsule allows the
// wire to send the data inside the command capsule when it fits.
func (q *qpair) setData(i uint16, e *nvme.SQE, b *Buffer, n int, toCtrl, capsule bool) {
	q.w.setData(i, e, b, n, toCtrl, capsule)
}

// queueSend appends the command capsule of slot i (SQE and setData's
// description) to the pending batch.
func (q *qpair) queueSend(i uint16) { q.w.queueSend(i) }

// flush sends the pending batch (one doorbell / one vectored write).
func (q *qpair) flush() error {
	if q.err != nil {
		return q.err
	}
	return q.w.flush()
}

// poll reaps what the wire received without blocking and returns how many
// events it processed. Commands whose capsule was sent and whose response
// arrived are handed to onComplete. A malformed or unexpected event fails
// the qpair (never panics).
func (q *qpair) poll() int { return q.w.poll() }

// fail records the first failure and reports it. Later failures are
// dropped.
func (q *qpair) fail(err error) {
	if q.err != nil {
		return
	}
	q.err = err
	if q.onFail != nil {
		q.onFail(err)
	}
}

// sendDone records that slot i's capsule left (RDMA: its SEND
// completed). A completion for a slot that is not waiting for it fails
// the qpair.
func (q *qpair) sendDone(i uint64) {
	if i >= uint64(len(q.slots)) || !q.slots[i].busy || q.slots[i].sent || q.slots[i].done {
		q.fail(fmt.Errorf("%w: %w: queue %d: send completion for slot %d that is not outstanding", ErrControllerLost, ErrProtocol, q.qid, i))
		return
	}
	s := &q.slots[i]
	s.sent = true
	if s.resp {
		s.done = true
		q.onComplete(uint16(i))
	}
}

// response matches a response capsule to its command by CID. A CID that
// names no outstanding command fails the qpair; it reports whether the
// response was taken.
func (q *qpair) response(cqe *nvme.CQE) bool {
	cid := cqe.CID()
	i := cid & q.slotMask
	if int(i) >= len(q.slots) {
		q.fail(fmt.Errorf("%w: %w: queue %d: response for CID %#x: no such command", ErrControllerLost, ErrProtocol, q.qid, cid))
		return false
	}
	s := &q.slots[i]
	if !s.busy || s.resp || s.done || q.cid(i) != cid {
		q.fail(fmt.Errorf("%w: %w: queue %d: response for CID %#x that is not outstanding", ErrControllerLost, ErrProtocol, q.qid, cid))
		return false
	}
	s.cqe = *cqe
	s.resp = true
	if s.sent {
		s.done = true
		q.onComplete(i)
	}
	return true
}

// failOutstanding marks every allocated, not yet completed slot done and
// calls fn for it. Used once the qpair or the controller is dead.
func (q *qpair) failOutstanding(fn func(idx uint16)) {
	for i := range q.slots {
		s := &q.slots[i]
		if s.busy && !s.done {
			s.done = true
			fn(uint16(i))
		}
	}
}

// disconnect tells the peer and stops the target from touching host
// memory (RDMA: QP to error; TCP: socket shut down). Any goroutine.
func (q *qpair) disconnect() { q.w.disconnect() }

// destroy releases the wire and its memory. The caller guarantees no
// goroutine uses the qpair any more.
func (q *qpair) destroy() error {
	if q.w == nil {
		return nil
	}
	return q.w.destroy()
}
