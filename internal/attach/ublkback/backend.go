package ublkback

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/ublk"
)

// MaxWriteZeroesBlocks is the largest write zeroes of one NVMe command
// (NLB is 16-bit, 0's based).
const MaxWriteZeroesBlocks = initiator.MaxBlocksPerIO

// maxDSMBlocks is one Dataset Management range's limit (32-bit NLB).
const maxDSMBlocks = 1<<32 - 1

// Backend serves a Session as a ublk.Backend. Make it with New.
type Backend struct {
	sess *initiator.Session
	geo  ublk.Geometry
}

// New reads the session's geometry from its current path (it must have
// one: open the session first). The geometry is fixed for the Backend's
// life; a device recovered later is checked against it by ublk.Recover.
func New(sess *initiator.Session) (*Backend, error) {
	l, ok := sess.Limits()
	if !ok {
		return nil, fmt.Errorf("ublkback: the session has no usable path")
	}
	bs := sess.BlockSize()
	page := os.Getpagesize()
	if bs < 512 || bs > page || bs&(bs-1) != 0 {
		return nil, fmt.Errorf("ublkback: block size %d: ublk takes 512 bytes to one page", bs)
	}
	mt := l.MaxTransfer / page * page
	if mt == 0 {
		return nil, fmt.Errorf("ublkback: controller max transfer %d is below a page", l.MaxTransfer)
	}
	g := ublk.Geometry{
		LogicalBlockSize: uint32(bs),
		Blocks:           uint64(sess.Size()) / uint64(bs),
		Queues:           max(1, l.Queues),
		Depth:            max(1, l.QueueDepth),
		MaxTransfer:      uint32(min(mt, 32<<20)),
		VolatileCache:    l.VolatileCache,
		FUA:              l.VolatileCache,
	}
	if l.ONCS&nvme.ONCSDSM != 0 {
		g.MaxDiscardBlocks = maxDSMBlocks
	}
	if l.ONCS&nvme.ONCSWriteZeroes != 0 {
		g.MaxWriteZeroesBlocks = MaxWriteZeroesBlocks
	}
	return &Backend{sess: sess, geo: g}, nil
}

// Geometry implements ublk.Backend.
func (b *Backend) Geometry() ublk.Geometry { return b.geo }

// OpenQueue implements ublk.Backend: depth tag buffers of MaxTransfer in
// one anonymous mapping, registered with the session (every controller
// of every path, also after reconnects) so the initiator moves their data
// by RDMA with no copy, and a Request per tag. Completions need no
// goroutine of ours: the initiator hands each finished Request to the
// queue (initiator.Notifier), which passes it straight to ublk's
// Completer — a non-blocking hand-off to the ublk queue goroutine.
func (b *Backend) OpenQueue(q, depth int, done ublk.Completer) (ublk.BackendQueue, error) {
	if depth < 1 || depth > 4096 {
		return nil, fmt.Errorf("ublkback: queue %d: depth %d", q, depth)
	}
	per := int(b.geo.MaxTransfer)
	mem, err := syscall.Mmap(-1, 0, depth*per, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("ublkback: queue %d buffers: %w", q, err)
	}
	regs, err := register(b.sess, mem, per)
	if err != nil {
		_ = syscall.Munmap(mem)
		return nil, fmt.Errorf("ublkback: queue %d buffers: %w", q, err)
	}
	sub, err := b.sess.Submitter(q)
	if err != nil {
		for _, r := range regs {
			_ = r.Close()
		}
		_ = syscall.Munmap(mem)
		return nil, fmt.Errorf("ublkback: queue %d: %w", q, err)
	}
	if w, ok := done.(ublk.Waker); ok {
		// The ublk queue goroutine waits for the CQ itself (Arm).
		sub.SetWaker(w.Wake)
	}
	return &queue{sub: sub, done: done, mem: mem, regs: regs, per: per, reqs: make([]initiator.Request, depth)}, nil
}

// queue is one ublk queue's backend side.
type queue struct {
	sub  *initiator.Submitter // this ublk queue's initiator queue, used by the ublk queue goroutine
	done ublk.Completer
	mem  []byte                 // depth × per bytes, outside the Go heap
	regs []*initiator.MemRegion // mem, registered with the session
	per  int
	reqs []initiator.Request // per tag: owned by the initiator from Submit to RequestDone
}

var _ ublk.Waiter = (*queue)(nil)

// Buffer implements ublk.BackendQueue.
func (q *queue) Buffer(tag uint16) []byte {
	o := int(tag) * q.per
	return q.mem[o : o+q.per : o+q.per]
}

// Submit implements ublk.BackendQueue: the request's commands wait in
// the initiator queue's intake until Flush. The ublk queue goroutine;
// never blocks, allocates nothing.
func (q *queue) Submit(tag uint16, req *ublk.Request) {
	r := &q.reqs[tag]
	// The caller's fields one by one, not a composite literal: that would
	// zero the whole Request, the layer's own part too (which it sets up
	// itself at each submission).
	r.Off, r.FUA, r.Notify, r.User, r.Done, r.Queue = int64(req.Offset), req.FUA, q, uint64(tag), nil, 0
	r.Data, r.Len = nil, 0
	switch req.Op {
	case ublk.OpRead:
		r.Op, r.Data = initiator.IORead, req.Data
	case ublk.OpWrite:
		r.Op, r.Data = initiator.IOWrite, req.Data
	case ublk.OpFlush:
		r.Op = initiator.IOFlush
	case ublk.OpDiscard:
		r.Op, r.Len = initiator.IODeallocate, int64(req.Length)
	case ublk.OpWriteZeroes:
		// The initiator sends DEAC=0: right for NoUnmap, allowed without.
		r.Op, r.Len = initiator.IOWriteZeroes, int64(req.Length)
	default:
		q.done.Complete(tag, syscall.EOPNOTSUPP)
		return
	}
	if err := q.sub.Submit(r); err != nil {
		q.done.Complete(tag, Errno(err))
	}
}

// Flush implements ublk.Flusher: the ublk queue goroutine, after each
// wake-up's requests, issues them on the initiator queue itself — one
// post for the burst, no hand-off to the initiator's queue goroutine —
// and finishes the commands that have completed, whose RequestDone
// (below) runs right here. What is left in flight the initiator's queue
// goroutine finishes.
func (q *queue) Flush() { q.sub.Flush() }

// Arm implements ublk.Waiter: the initiator queue's CQ descriptor
// (initiator.Submitter.Arm), so that the ublk queue goroutine sleeps in
// its io_uring until a block request or an NVMe completion arrives and
// reaps the completions itself (its next Flush): no initiator goroutine
// and no eventfd write between an RDMA completion and the commit.
func (q *queue) Arm(signalled bool) (int, uint64) { return q.sub.Arm(signalled) }

// Release implements ublk.Waiter: the initiator queue's goroutine reaps
// again.
func (q *queue) Release() { q.sub.Release() }

// RequestDone implements initiator.Notifier: on the initiator's queue
// goroutine (or inside Submit for a request refused at once), it ends the
// tag's ublk request. Never blocks, allocates nothing.
func (q *queue) RequestDone(r *initiator.Request) {
	errno := Errno(r.Err)
	tag := uint16(r.User)
	r.Data = nil
	q.done.Complete(tag, errno)
}

// Close implements ublk.BackendQueue: every request has completed (ublk's
// contract), so the buffers are deregistered and unmapped.
func (q *queue) Close() error {
	var errs []error
	for _, r := range q.regs {
		errs = append(errs, r.Close())
	}
	return errors.Join(append(errs, syscall.Munmap(q.mem))...)
}

// regionBytes is the most one MemRegion of tag buffers spans: the
// initiator registers a MemRegion in memory regions of at most 1 GiB (the
// PVRDMA limit), and a command that crosses from one to the next takes
// the copy path, so each MemRegion holds whole tag buffers within 1 GiB.
// A variable for tests only.
var regionBytes = 1 << 30

// register registers mem (tag buffers of per bytes) with the session as
// MemRegions of whole tag buffers, at most regionBytes each (one region
// unless depth × per exceeds it). On error nothing stays registered.
func register(sess *initiator.Session, mem []byte, per int) ([]*initiator.MemRegion, error) {
	step := max(1, regionBytes/per) * per
	var regs []*initiator.MemRegion
	for off := 0; off < len(mem); off += step {
		end := min(off+step, len(mem))
		r, err := sess.RegisterBuffer(mem[off:end:end])
		if err != nil {
			for _, r := range regs {
				_ = r.Close()
			}
			return nil, err
		}
		regs = append(regs, r)
	}
	return regs, nil
}
