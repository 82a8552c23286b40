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

// slot is one preallocated I/O: the session request and who waits for it.
// A slot is owned by whoever took it from Leg.free until it goes back.
type slot struct {
	req  initiator.Request   // Done = Leg.done, User = index; reused
	cb   blockdev.Completion // async caller; nil for a blocking one
	wake chan wakeMsg        // a blocking caller's result (cap 1)
	// born is 1 + the watchdog tick at submission (0 while not busy).
	born  atomic.Uint32
	state atomic.Uint32
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
	s.born.Store(l.tick.Load() + 1)
	if op == initiator.IORead {
		s.state.Store(slotBusyRead)
	} else {
		s.state.Store(slotBusy)
	}
	if s.cb != nil && l.submitBatched(r) {
		return
	}
	_ = l.s.Submit(r) // fails only for a nil Done
}

// acquire takes a free slot, waiting for one; it fails once the leg is
// closed or down.
func (l *Leg) acquire() (*slot, error) {
	if d := l.down.Load(); d != nil {
		return nil, d
	}
	select {
	case s := <-l.free:
		if l.closed.Load() {
			l.free <- s
			return nil, l.errClosed()
		}
		return s, nil
	case <-l.closing:
		return nil, l.errClosed()
	}
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
		l.free <- s
	}
	return m.err
}

// trySlot takes a free slot without waiting, for the async path.
func (l *Leg) trySlot() *slot {
	if l.down.Load() != nil {
		return nil
	}
	select {
	case s := <-l.free:
		if l.closed.Load() {
			l.free <- s
			return nil
		}
		return s
	default:
		return nil
	}
}

// SubmitWrite starts an asynchronous write (NVMe Write, FUA with
// blockdev.WriteFUA). It refuses (false) an invalid request, when Depth
// I/Os are in flight, and when the leg is closed or down. It does not
// block or allocate; done.IODone is called from the leg's completion
// goroutine or its watchdog.
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

// completions is the leg's completion goroutine: it receives every
// request the session finishes and completes its caller.
func (l *Leg) completions() {
	defer l.wg.Done()
	for r := range l.done {
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
			l.free <- s
			continue
		}
		s.req.Data = nil
		if cb := s.cb; cb != nil {
			s.cb = nil
			l.free <- s
			cb.IODone(err)
			continue
		}
		s.wake <- wakeMsg{err: err}
	}
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
