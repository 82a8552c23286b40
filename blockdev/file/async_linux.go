package file

import (
	"runtime"
	"sync"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// DefaultRingEntries is the default Options.RingEntries: I/Os the
// io_uring fast path keeps in flight; more fall back to ReadAt/WriteAt.
const DefaultRingEntries = 512

// stopTag is the user data of the NOP that stops the reaper.
const stopTag = ^uint64(0)

// asyncRing is the io_uring fast path of a Backend (blockdev.Async): a
// ring on the O_DIRECT descriptor, a slot per possible in-flight I/O, and
// one reaper goroutine that completes them.
//
// Every in-flight I/O holds b.mu for reading from submission until its
// IODone has returned, so Close (which takes b.mu for writing) waits for
// all of them, and no IODone runs after Close returned.
type asyncRing struct {
	b    *Backend
	ring *uring.Ring

	mu      sync.Mutex // guards the ring's submission side, slots, free, closing, plugs
	slots   []asyncSlot
	free    []uint32
	closing bool
	plugs   int // outstanding Plug calls: Submit* only queue

	fixed fixedTable // blockdev.FixedBuffers (async_fixed_linux.go)

	done chan struct{} // closed when the reaper exited
}

// asyncSlot is one in-flight I/O.
type asyncSlot struct {
	c     blockdev.Completion
	buf   []byte
	off   int64
	write bool
	fixed bool // submitted as READ_FIXED / WRITE_FIXED
	flags blockdev.WriteFlags
}

// startRing sets up the fast path; without io_uring (old kernel, seccomp)
// it leaves b.ring nil and the backend works through ReadAt/WriteAt only.
func (b *Backend) startRing(entries int) {
	if b.dfd < 0 {
		return
	}
	r, err := uring.New(entries)
	if err != nil {
		return
	}
	a := &asyncRing{b: b, ring: r, done: make(chan struct{})}
	n := r.Entries()
	a.slots = make([]asyncSlot, n)
	a.free = make([]uint32, n)
	for i := range a.free {
		a.free[i] = uint32(n - 1 - i)
	}
	b.ring = a
	go a.reap()
}

// SubmitRead implements blockdev.Async: an O_DIRECT read through io_uring
// when buf and the offset are aligned for direct I/O, else false.
func (b *Backend) SubmitRead(buf []byte, lba uint64, done blockdev.Completion) bool {
	return b.submit(buf, lba, false, 0, 0, done)
}

// SubmitWrite implements blockdev.Async. WriteFUA uses RWF_DSYNC on the
// write itself; where the kernel lacks it, false (the blocking path
// emulates FUA).
func (b *Backend) SubmitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, done blockdev.Completion) bool {
	return b.submit(buf, lba, true, flags, 0, done)
}

// submit starts one I/O; reg, when it names a live fixed-buffer
// registration holding buf, makes it a READ_FIXED / WRITE_FIXED.
func (b *Backend) submit(buf []byte, lba uint64, write bool, flags blockdev.WriteFlags, reg blockdev.FixedRegion, done blockdev.Completion) bool {
	a := b.ring
	if a == nil || done == nil || len(buf) == 0 || len(buf) > 1<<30 {
		return false
	}
	if write && (b.readOnly || (flags&blockdev.WriteFUA != 0 && b.noDSync.Load())) {
		return false
	}
	if !b.mu.TryRLock() {
		return false // Close is under way: the blocking path reports it
	}
	v := [1][]byte{buf}
	off, _, err := b.prepare(v[:], lba)
	if err != nil || !b.directOK(v[:], off) {
		b.mu.RUnlock()
		return false
	}
	sqe := uring.SQE{
		Opcode: uring.OpRead,
		FD:     int32(b.dfd),
		Off:    uint64(off),
		Addr:   uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf)))),
		Len:    uint32(len(buf)),
	}
	if write {
		sqe.Opcode = uring.OpWrite
		if flags&blockdev.WriteFUA != 0 {
			sqe.RWFlags = uring.RWFDSync
		}
		raceReadBufs(v[:])
	} else {
		raceWriteBufs(v[:])
	}
	a.mu.Lock()
	if a.closing || len(a.free) == 0 {
		a.mu.Unlock()
		b.mu.RUnlock()
		return false
	}
	i := a.free[len(a.free)-1]
	sqe.UserData = uint64(i)
	fixed := false
	if reg != 0 {
		if idx, ok := a.fixed.index(reg, buf); ok {
			fixed = true
			sqe.BufIndex = idx
			sqe.Opcode = uring.OpReadFixed
			if write {
				sqe.Opcode = uring.OpWriteFixed
			}
		}
	}
	if a.ring.Prepare(&sqe) != nil {
		a.mu.Unlock()
		b.mu.RUnlock()
		return false
	}
	a.free = a.free[:len(a.free)-1]
	a.slots[i] = asyncSlot{c: done, buf: buf, off: off, write: write, fixed: fixed, flags: flags}
	if a.plugs == 0 {
		// An error here leaves the entry in the SQ; the reaper resubmits
		// it after its next completion, and the next submission retries.
		_, _ = a.ring.Submit()
	}
	a.mu.Unlock()
	return true
}

// Plug implements blockdev.AsyncBatcher: until the matching Unplug,
// SubmitRead/SubmitWrite only queue their I/O in the ring.
func (b *Backend) Plug() {
	if a := b.ring; a != nil {
		a.mu.Lock()
		a.plugs++
		a.mu.Unlock()
	}
}

// Unplug implements blockdev.AsyncBatcher: releasing the last plug submits
// every queued I/O with one io_uring_enter.
func (b *Backend) Unplug() {
	if a := b.ring; a != nil {
		a.mu.Lock()
		if a.plugs > 0 {
			a.plugs--
		}
		if a.plugs == 0 {
			_, _ = a.ring.Submit()
		}
		a.mu.Unlock()
	}
}

// reap is the completion goroutine: it waits for completions, finishes
// each I/O and calls its IODone. It exits on the stop NOP from close.
func (a *asyncRing) reap() {
	defer close(a.done)
	cqes := make([]uring.CQE, 64)
	for {
		if err := a.ring.Wait(); err != nil {
			// Not expected (EBADF, EFAULT); keep the I/O path alive.
			runtime.Gosched()
			continue
		}
		n := a.ring.Reap(cqes)
		stop := false
		for _, c := range cqes[:n] {
			if c.UserData == stopTag {
				stop = true
				continue
			}
			a.mu.Lock()
			s := a.slots[c.UserData]
			a.slots[c.UserData] = asyncSlot{}
			a.free = append(a.free, uint32(c.UserData))
			a.mu.Unlock()
			err := a.b.finishAsync(&s, c.Res)
			s.c.IODone(err)
			a.b.mu.RUnlock()
		}
		a.mu.Lock()
		if a.plugs == 0 {
			_, _ = a.ring.Submit() // entries a failed io_uring_enter left behind
		}
		a.mu.Unlock()
		if stop {
			return
		}
	}
}

// finishAsync turns a completion into the I/O's result. A complete
// transfer is done; anything else (short transfer, EINVAL from a stricter
// O_DIRECT alignment, EAGAIN, EOPNOTSUPP for RWF_DSYNC, a real I/O error)
// is redone through the blocking path, which owns the fallbacks and the
// error mapping. That runs on the reaper; it is rare.
func (b *Backend) finishAsync(s *asyncSlot, res int32) error {
	if res >= 0 && int(res) == len(s.buf) {
		b.stats.direct.Add(1)
		b.stats.async.Add(1)
		if s.fixed {
			b.stats.fixedIOs.Add(1)
		}
		if s.write && s.flags&blockdev.WriteFUA != 0 {
			b.stats.fuaNative.Add(1)
		}
		return nil
	}
	v := [1][]byte{s.buf}
	if s.write {
		return b.writeLocked(v[:], s.off, s.flags)
	}
	return b.xfer(v[:], s.off, kindRead)
}

// close stops the reaper and releases the ring. The caller holds b.mu for
// writing, so nothing is in flight.
func (a *asyncRing) close() {
	a.mu.Lock()
	a.closing = true
	a.plugs = 0
	err := a.ring.Prepare(&uring.SQE{Opcode: uring.OpNop, UserData: stopTag})
	if err == nil {
		_, err = a.ring.Submit()
	}
	a.mu.Unlock()
	if err == nil {
		<-a.done
		_ = a.ring.Close()
	}
	// Otherwise the reaper stays parked on a ring with nothing in flight;
	// leaking it is safer than unmapping under it.
}
