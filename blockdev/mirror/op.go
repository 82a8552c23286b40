package mirror

import (
	"fmt"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// opKind is what a write-class operation does on each leg.
type opKind uint8

const (
	opWrite opKind = iota
	opZeroes
	opDiscard
	opFlush
)

// op is the preallocated state of one write-class operation in flight:
// what to do, the leg set it was started against, one completion per leg
// and the count of legs still busy. Taken from Mirror.free, returned
// there when the operation has completed; nothing in it is allocated per
// I/O.
type op struct {
	m     *Mirror
	kind  opKind
	flags blockdev.WriteFlags
	lba   uint64
	n     uint64 // blocks (not for flush)
	bufs  [][]byte
	vec   [1][]byte // bufs for a single-buffer submission
	reg   blockdev.FixedRegion
	set   *legSet

	// pending counts the legs still busy plus one reference held by the
	// submitter until it has started them all; whoever drops it to zero
	// finishes the operation.
	pending atomic.Int32
	errs    [maxLegs]error // per leg; each written by one goroutine before its pending decrement
	sent    uint16         // legs (set indexes) the operation went to
	wait    uint16         // legs whose fault record the operation must wait for
	leg     [maxLegs]legDone
	done    blockdev.Completion // async caller; nil for a blocking call
	wake    chan struct{}       // blocking caller's wake-up (capacity 1)
}

// legDone is the blockdev.Completion of one leg's part of an op.
type legDone struct {
	o *op
	i uint8
}

// IODone records leg i's result. It runs on the leg's completion
// goroutine (or a worker) and does not block.
func (d *legDone) IODone(err error) {
	o := d.o
	o.errs[d.i] = err
	if o.pending.Add(-1) == 0 {
		o.finished()
	}
}

// job is a worker's task: a leg's blocking call, or (fin) finishing an
// async op whose last leg completed inside SubmitWrite, where the caller's
// IODone must not run.
type job struct {
	o   *op
	i   uint8
	fin bool
}

// getOp takes an idle op, waiting while MaxInFlight are in flight; nil
// after Close.
func (m *Mirror) getOp() *op {
	o, ok := m.free.Get()
	if !ok {
		return nil
	}
	return m.keepOp(o)
}

// keepOp returns o, just taken from the free list, or puts it back and
// returns nil once the mirror is closed.
func (m *Mirror) keepOp(o *op) *op {
	if m.closed.Load() {
		m.putOp(o)
		return nil
	}
	return o
}

// tryGetOp takes an idle op without waiting, or returns nil.
func (m *Mirror) tryGetOp() *op {
	o, ok := m.free.TryGet()
	if !ok {
		return nil
	}
	return m.keepOp(o)
}

// putOp clears o and returns it to the free list.
func (m *Mirror) putOp(o *op) {
	o.bufs, o.vec[0], o.set, o.done, o.reg = nil, nil, nil, nil, 0
	o.errs = [maxLegs]error{}
	o.sent, o.wait, o.flags = 0, 0, 0
	m.free.Put(o)
}

// ranged reports whether o holds region locks.
func (o *op) ranged() bool { return o.kind != opFlush }

// prepare decides, for the leg set o runs against, which legs get the
// operation and which pending fault records it waits for, and marks the
// dirty bitmaps of faulted legs. The caller holds o's region locks, taken
// before set was loaded (see doc.go, "Rebuild").
func (o *op) prepare(set *legSet) {
	o.set = set
	var r0, r1 uint64
	if o.ranged() {
		r0, r1 = o.m.regions(o.lba, o.n)
	}
	cnt := int32(1) // the submitter's reference
	for i := range set.entries {
		e := &set.entries[i]
		if e.state == Faulted {
			if o.ranged() {
				e.l.markDirty(r0, r1)
			}
			if e.ep != nil {
				o.wait |= 1 << i
			}
			continue
		}
		o.sent |= 1 << i
		cnt++
	}
	o.pending.Store(cnt)
}

// start hands leg i its part of o: on the leg's Async path when it has
// one and takes the I/O, otherwise to a worker. It never blocks (the jobs
// channel holds every job of every op in flight).
func (m *Mirror) start(o *op, i int) {
	l := o.set.entries[i].l
	if o.kind == opWrite && l.async != nil && len(o.bufs) == 1 {
		buf := o.bufs[0]
		if o.reg != 0 && l.fixed != nil {
			if h := l.fixedHandle(o.reg); h != 0 {
				if l.fixed.SubmitWriteFixed(buf, o.lba, o.flags, h, &o.leg[i]) {
					return
				}
				m.jobs <- job{o: o, i: uint8(i)}
				return
			}
		}
		if l.async.SubmitWrite(buf, o.lba, o.flags, &o.leg[i]) {
			return
		}
	}
	m.jobs <- job{o: o, i: uint8(i)}
}

// exec runs leg i's part of o as a blocking call.
func (o *op) exec(i int) error {
	b := o.set.entries[i].l.b
	switch o.kind {
	case opWrite:
		return b.WriteAt(o.bufs, o.lba, o.flags)
	case opZeroes:
		return b.WriteZeroes(o.lba, o.n)
	case opDiscard:
		return b.Discard(o.lba, o.n)
	default:
		return b.Flush()
	}
}

// worker runs jobs until Close.
func (m *Mirror) worker() {
	defer m.wg.Done()
	for j := range m.jobs {
		if j.fin {
			j.o.finished()
			continue
		}
		j.o.leg[j.i].IODone(j.o.exec(int(j.i)))
	}
}

// finished runs when o's last leg is done (not on the submitter's
// goroutine inside SubmitWrite). A blocking caller is woken; an async
// operation completes here when nothing failed, or goes to the settler
// goroutine, which may block in Membership.Fault.
func (o *op) finished() {
	if o.done == nil {
		o.wake <- struct{}{}
		return
	}
	if o.wait != 0 || o.failed() {
		o.m.settles <- o
		return
	}
	o.m.complete(o, nil)
}

// failed reports whether any leg failed.
func (o *op) failed() bool {
	for i := range o.set.entries {
		if o.sent&(1<<i) != 0 && o.errs[i] != nil {
			return true
		}
	}
	return false
}

// complete ends an async op: releases its regions, tells the caller,
// returns o to the free list.
func (m *Mirror) complete(o *op, err error) {
	if o.ranged() {
		r0, r1 := m.regions(o.lba, o.n)
		m.locks.unlockShared(r0, r1)
	}
	done := o.done
	done.IODone(err)
	m.putOp(o)
}

// settler records the faults of async operations and completes them.
func (m *Mirror) settler() {
	defer m.wg.Done()
	for o := range m.settles {
		m.complete(o, m.settle(o))
	}
}

// settle turns o's per-leg results into its result, once every fault it
// met is recorded. A local failure stops the volume; a remote leg that
// failed is marked faulted (its regions dirty) and its fault recorded
// before the operation may succeed; pending records the operation saw
// are waited for. It may block (Membership.Fault); never called on a
// completion goroutine.
func (m *Mirror) settle(o *op) error {
	if err := o.errs[0]; err != nil && o.sent&1 != 0 {
		return m.failLocal(err)
	}
	var eps [maxLegs]*episode
	for i := 1; i < len(o.set.entries); i++ {
		l := o.set.entries[i].l
		switch {
		case o.sent&(1<<i) != 0 && o.errs[i] != nil:
			if o.kind == opFlush {
				l.markAll() // what the leg lost is unknown: full copy
			} else {
				l.markDirty(m.regions(o.lba, o.n))
			}
			eps[i] = m.fault(l, fmt.Errorf("mirror: leg %q: %w", l.name, o.errs[i]))
		case o.wait&(1<<i) != 0:
			eps[i] = o.set.entries[i].ep
		}
	}
	var err error
	for i, ep := range eps {
		if ep == nil {
			continue
		}
		if e := m.await(o.set.entries[i].l, ep); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		m.diverged.Store(true) // failed (fenced) after reaching some legs
	}
	return err
}

// runSync runs o for a blocking caller: region locks, fan-out, the local
// leg on the caller's goroutine, wait, settle.
func (m *Mirror) runSync(o *op) error {
	var r0, r1 uint64
	if o.ranged() {
		r0, r1 = m.regions(o.lba, o.n)
		m.locks.lockShared(r0, r1)
	}
	o.prepare(m.set.Load())
	for i := 1; i < len(o.set.entries); i++ {
		if o.sent&(1<<i) != 0 {
			m.start(o, i)
		}
	}
	if o.sent&1 != 0 {
		o.errs[0] = o.exec(0)
		o.pending.Add(-1) // never the last: the submitter's reference remains
	}
	if o.pending.Add(-1) != 0 {
		<-o.wake
	}
	var err error
	if o.wait != 0 || o.failed() {
		err = m.settle(o)
	}
	if o.ranged() {
		m.locks.unlockShared(r0, r1)
	}
	m.putOp(o)
	return err
}

// SubmitWrite starts buf's write on every in-sync and syncing leg — each
// leg's Async path, or a worker running its WriteAt — and calls
// done.IODone once every one of them has it and every leg that failed is
// recorded faulted. It returns false (and does nothing) when the request
// is invalid, MaxInFlight operations are in flight, the rebuild is
// copying one of buf's regions, a fault is being recorded, or the mirror
// is closed or down; the caller then uses WriteAt, which waits or
// reports the error. It never blocks and does not allocate.
func (m *Mirror) SubmitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, done blockdev.Completion) bool {
	return m.submitWrite(buf, lba, flags, 0, done)
}

func (m *Mirror) submitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	if len(buf) == 0 || len(buf)%m.bs != 0 {
		return false
	}
	n := uint64(len(buf) / m.bs)
	if m.check(lba, n) != nil {
		return false
	}
	o := m.tryGetOp()
	if o == nil {
		return false
	}
	r0, r1 := m.regions(lba, n)
	if !m.locks.tryShared(r0, r1) {
		m.putOp(o)
		return false
	}
	set := m.set.Load()
	if set.pending() || m.localFailed() != nil {
		m.locks.unlockShared(r0, r1)
		m.putOp(o)
		return false
	}
	o.kind, o.lba, o.n, o.flags, o.reg, o.done = opWrite, lba, n, flags, reg, done
	o.vec[0] = buf
	o.bufs = o.vec[:]
	o.prepare(set)
	// Remote legs first, the local one (entry 0) last: the network round
	// trip of the copies then overlaps the local submission, which may do
	// the write inline (io_uring_enter).
	for i := len(o.set.entries) - 1; i >= 0; i-- {
		if o.sent&(1<<i) != 0 {
			m.start(o, i)
		}
	}
	if o.pending.Add(-1) == 0 {
		m.jobs <- job{o: o, fin: true} // IODone must not run inside SubmitWrite
	}
	return true
}

// SubmitRead starts buf's read on the local leg's Async path; false when
// the local leg has none or refuses (the caller then uses ReadAt).
func (m *Mirror) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	if m.local.async == nil || m.closed.Load() || m.localFailed() != nil {
		return false
	}
	return m.local.async.SubmitRead(buf, lba, done)
}
