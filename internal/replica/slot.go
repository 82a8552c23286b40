package replica

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
)

// Slot states.
const (
	slotIdle       uint32 = iota // in the free list, or held by a submitter or drain
	slotBusy                     // its write-class request is in the session
	slotBusyRead                 // its read request is in the session
	slotAbandoning               // the watchdog is completing its caller
	slotAbandoned                // the watchdog completed it; the request is still in the session
)

// Submission marks (slot.sub): whether the session's completion of a
// slot's request may finish its caller where it happens (RequestDone).
const (
	subNone      uint32 = iota // not inside a submission: finish in RequestDone
	subInside                  // its submitter is inside Session.Submit
	subDoneEarly               // completed meanwhile: the submitter hands it to the completion goroutine
)

// slot is one preallocated I/O: the session request and who waits for it.
// A slot is owned by whoever took it from Leg.free until it goes back.
type slot struct {
	req  initiator.Request   // Notify = the Leg, User = index; reused
	cb   blockdev.Completion // async caller; nil for a blocking one
	wake chan wakeMsg        // a blocking caller's result (cap 1)
	// born is 1 + the watchdog tick at submission (0 while not busy).
	born  atomic.Uint32
	op    atomic.Uint32 // the request's initiator.IOOp, for the watchdog's log
	state atomic.Uint32
	sub   atomic.Uint32 // subNone, subInside or subDoneEarly
}

// wakeMsg is a blocking caller's result. abandoned: the watchdog failed
// the I/O before the session returned it, and the completion goroutine
// will put the slot back (the caller must not).
type wakeMsg struct {
	err       error
	abandoned bool
}

// submit hands s's request to the session — for an async caller
// (s.cb set) under a Plug, through the burst's Submitter (batch.go).
// The caller filled s.cb.
func (l *Leg) submit(s *slot, op initiator.IOOp, lba uint64, data []byte, n uint64, fua bool) {
	r := &s.req
	r.Op, r.Off, r.Data, r.Len, r.FUA = op, int64(lba)*int64(l.bs), data, int64(n)*int64(l.bs), fua
	s.op.Store(uint32(op))
	s.born.Store(l.tick.Load() + 1)
	if op == initiator.IORead {
		s.state.Store(slotBusyRead)
	} else {
		s.state.Store(slotBusy)
	}
	if s.cb != nil && l.submitBatched(r) {
		return
	}
	s.sub.Store(subInside)
	_ = l.s.Submit(r) // fails only for a request without Notify
	l.submitted(s)
}

// submitted ends s's submission mark once its submitter is out of the
// session's Submit: a request that completed meanwhile (on the
// submitter's own goroutine — a request refused before any command was
// issued completes inside Submit — or already on a queue goroutine) is
// finished by the completion goroutine, since IODone must not run inside
// Submit*.
func (l *Leg) submitted(s *slot) {
	if !s.sub.CompareAndSwap(subInside, subNone) {
		s.sub.Store(subNone)
		l.done <- &s.req
	}
}

// RequestDone implements initiator.Notifier: the session finished a
// slot's request. In the steady state it finishes the caller right here,
// on the initiator's queue goroutine, with no hand-off. To the
// completion goroutine go: a request whose submitter is still inside
// Session.Submit (submitted sends it); whatever completes while the
// batch lock's holder is inside a Submitter's Submit or Flush (it may
// run on that goroutine, and IODone must not run under the leg's lock —
// it may come back to Plug); and whatever completes while the leg closes
// or is down (Session.Close and the watchdog complete requests on their
// callers' goroutines, where those callers may hold locks IODone takes).
// Never blocks: l.done has room for every slot.
func (l *Leg) RequestDone(r *initiator.Request) {
	s := &l.slots[r.User]
	if s.sub.CompareAndSwap(subInside, subDoneEarly) {
		return // the submitter sends it on (submitted)
	}
	if l.batching.Load() || l.closeBeg.Load() || l.down.Load() != nil {
		l.done <- r
		return
	}
	l.finish(r)
}

// acquire takes a free slot, waiting for one; it fails once the leg is
// closed or down.
func (l *Leg) acquire() (*slot, error) {
	if d := l.down.Load(); d != nil {
		return nil, d
	}
	s, ok := l.free.Get()
	if !ok {
		return nil, l.errClosed()
	}
	if l.closed.Load() {
		l.free.Put(s)
		return nil, l.errClosed()
	}
	return s, nil
}

func (l *Leg) errClosed() error {
	return fmt.Errorf("%w: replica %s", blockdev.ErrClosed, l.cfg.SubNQN)
}

// do runs one request and waits for it.
func (l *Leg) do(op initiator.IOOp, lba uint64, data []byte, n uint64, fua bool) error {
	s, err := l.acquire()
	if err != nil {
		return err
	}
	s.cb = nil
	l.submit(s, op, lba, data, n, fua)
	m := <-s.wake
	if !m.abandoned {
		l.free.Put(s)
	}
	return m.err
}

// trySlot takes a free slot without waiting, for the async path.
func (l *Leg) trySlot() *slot {
	if l.down.Load() != nil {
		return nil
	}
	s, ok := l.free.TryGet()
	if !ok {
		return nil
	}
	if l.closed.Load() {
		l.free.Put(s)
		return nil
	}
	return s
}

// SubmitWrite starts an asynchronous write (NVMe Write, FUA with
// blockdev.WriteFUA). It refuses (false) an invalid request, when Depth
// I/Os are in flight, and when the leg is closed or down. It does not
// block or allocate; done.IODone is called from the initiator queue
// goroutine that completed it, the leg's completion goroutine or its
// watchdog (RequestDone).
func (l *Leg) SubmitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, done blockdev.Completion) bool {
	if len(buf) == 0 || len(buf)%l.bs != 0 || l.check(lba, uint64(len(buf)/l.bs)) != nil {
		return false
	}
	s := l.trySlot()
	if s == nil {
		return false
	}
	s.cb = done
	l.submit(s, initiator.IOWrite, lba, buf, 0, flags&blockdev.WriteFUA != 0)
	return true
}

// SubmitRead starts an asynchronous read; as SubmitWrite.
func (l *Leg) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	if len(buf) == 0 || len(buf)%l.bs != 0 || l.check(lba, uint64(len(buf)/l.bs)) != nil {
		return false
	}
	s := l.trySlot()
	if s == nil {
		return false
	}
	s.cb = done
	l.submit(s, initiator.IORead, lba, buf, 0, false)
	return true
}

// completions is the leg's completion goroutine: it completes the
// callers of the requests RequestDone and submitted hand it.
func (l *Leg) completions() {
	defer l.wg.Done()
	for r := range l.done {
		l.finish(r)
	}
}

// finish completes the caller of a request the session returned and puts
// its slot back. Any goroutine; it does not block.
func (l *Leg) finish(r *initiator.Request) {
	s := &l.slots[r.User]
	err := l.result(r)
	s.born.Store(0)
	if !s.state.CompareAndSwap(slotBusy, slotIdle) && !s.state.CompareAndSwap(slotBusyRead, slotIdle) {
		// Abandoned: the watchdog completes (completed) the
		// caller; wait for it to be done with the slot's fields
		// (a few instructions) before reusing the slot.
		for s.state.Load() != slotAbandoned {
			runtime.Gosched()
		}
		s.req.Data = nil
		s.cb = nil
		s.state.Store(slotIdle)
		l.free.Put(s)
		return
	}
	s.req.Data = nil
	if cb := s.cb; cb != nil {
		s.cb = nil
		l.free.Put(s)
		cb.IODone(err)
		return
	}
	s.wake <- wakeMsg{err: err}
}

// result maps a finished request's outcome to the blockdev error the
// mirror sees.
func (l *Leg) result(r *initiator.Request) error {
	if r.Err == nil {
		return nil
	}
	if d := l.down.Load(); d != nil {
		return d
	}
	if l.closed.Load() && (errors.Is(r.Err, initiator.ErrSessionClosed) || errors.Is(r.Err, initiator.ErrClosed)) {
		return l.errClosed()
	}
	if errors.Is(r.Err, nvme.StatusLBAOutOfRange) {
		return fmt.Errorf("%w: replica %s: %w", blockdev.ErrOutOfRange, l.cfg.SubNQN, r.Err)
	}
	return &IOError{Leg: l.cfg.SubNQN, Op: r.Op.String(), LBA: uint64(r.Off) / uint64(l.bs), Err: r.Err}
}
