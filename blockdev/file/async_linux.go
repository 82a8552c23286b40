package file

import (
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// DefaultRingEntries is the default Options.RingEntries: io_uring entries
// one backend keeps in flight on the fast path (one per I/O, or one per
// piece of an I/O larger than its MaxPiece); more fall back to
// ReadAt/WriteAt.
const DefaultRingEntries = 512

// The fast path of a Backend (blockdev.Async) runs on a ring it shares
// with other backends (ringgroup_linux.go). Every in-flight I/O holds b.mu
// for reading from submission until its IODone has returned, so Close
// (which takes b.mu for writing) waits for all of them, and no IODone runs
// after Close returned. The per-backend fields below (inflight, plugs,
// detached) are guarded by the ring's mutex.

// startRing attaches the backend to a shared ring; without io_uring (old
// kernel, seccomp) or O_DIRECT it leaves b.ring nil and the backend works
// through ReadAt/WriteAt only.
func (b *Backend) startRing(opts Options) {
	if b.dfd < 0 || opts.RingEntries < 0 {
		return
	}
	g := opts.Rings
	if g == nil {
		var err error
		if g, err = DefaultRingGroup(); err != nil {
			return
		}
	}
	r := g.attach()
	if r == nil {
		return
	}
	b.group, b.ring = g, r
	b.maxInflight = opts.RingEntries
	if b.maxInflight == 0 {
		b.maxInflight = DefaultRingEntries
	}
	b.maxPiece = b.pieceLimit(opts.MaxPiece)
}

// maxPieceBytes caps a piece at what one direct-I/O bio holds
// (BIO_MAX_VECS = 256 pages of 4 KiB).
const maxPieceBytes = 1 << 20

// pieceLimit resolves Options.MaxPiece (see there) to the bytes one
// io_uring entry carries at most: a multiple of the direct-I/O alignment
// and, from 4 KiB up, of 4 KiB; 0 for no limit.
func (b *Backend) pieceLimit(want int) int {
	if want < 0 {
		return 0
	}
	if want == 0 {
		if !b.blockDev {
			return 0
		}
		var sectors uint16
		if ioctlPtr(b.dfd, ioctlBLKSECTGET, unsafe.Pointer(&sectors)) != 0 {
			return 0
		}
		want = int(sectors) << 9
	}
	// One direct-I/O bio at most: a larger transfer takes several bios,
	// which the block layer will not issue without blocking either.
	want = min(want, maxPieceBytes)
	// Whole pages where the limit allows, so that no page is split
	// between two pieces (each would pin it).
	unit := int(b.align)
	if want >= 4096 {
		unit = max(unit, 4096)
	}
	p := want &^ (unit - 1)
	if p < unit {
		return 0
	}
	return p
}

// stopRing detaches a closing backend from its ring: its plug no longer
// holds back the ring, its fixed-buffer registrations are dropped. The
// caller holds b.mu for writing, so nothing of b is in flight.
func (b *Backend) stopRing() {
	a := b.ring
	a.mu.Lock()
	b.detached = true
	if b.plugs > 0 {
		b.plugs = 0
		a.plugged--
		if a.plugged == 0 {
			_, _ = a.ring.Submit()
		}
	}
	a.mu.Unlock()
	b.releaseFixed()
	b.group.detach()
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
	// One entry, or pieces of at most maxPiece bytes (pieceLimit) that
	// the kernel issues without splitting them itself.
	piece, parts := len(buf), 1
	if p := b.maxPiece; p > 0 && len(buf) > p {
		piece, parts = p, (len(buf)+p-1)/p
	}
	sqe := uring.SQE{
		Opcode: uring.OpRead,
		FD:     int32(b.dfd),
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
	if a.stopped || b.detached || len(a.free) < parts || b.inflight+parts > b.maxInflight || a.ring.Space() < parts {
		a.mu.Unlock()
		b.mu.RUnlock()
		return false
	}
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
	// The first piece's slot is the I/O's head: it holds the completion
	// and the whole buffer, and counts the pieces still in flight
	// (drainLocked); the others name it.
	head := a.free[len(a.free)-1]
	for k := range parts {
		i := a.free[len(a.free)-1-k]
		n := min(piece, len(buf)-k*piece)
		sqe.UserData = uint64(i)
		sqe.Off = uint64(off) + uint64(k*piece)
		sqe.Addr = uint64(uintptr(unsafe.Pointer(unsafe.SliceData(buf[k*piece:]))))
		sqe.Len = uint32(n)
		if err := a.ring.Prepare(&sqe); err != nil {
			// Space counted this entry under a.mu, and only a.mu's holders
			// prepare: an entry missing here would leave a slot no
			// completion ever frees (Close would wait for it forever).
			panic("file: io_uring refused an entry Ring.Space counted: " + err.Error())
		}
		if k == 0 {
			a.slots[i] = asyncSlot{b: b, c: done, buf: buf, off: off, write: write, fixed: fixed, flags: flags, n: n, parts: parts}
		} else {
			a.slots[i] = asyncSlot{b: b, n: n, head: head + 1}
		}
	}
	a.free = a.free[:len(a.free)-parts]
	b.inflight += parts
	if parts > 1 {
		b.stats.pieced.Add(1)
	}
	if b.plugs == 0 {
		// This also hands the kernel what plugged backends on the ring
		// queued: their I/O starts early, which a plug allows. An error
		// leaves the entry in the SQ; the reaper resubmits it after its
		// next completion, and the next submission retries.
		_, _ = a.ring.Submit()
	}
	a.mu.Unlock()
	return true
}

// Plug implements blockdev.AsyncBatcher: until the matching Unplug,
// SubmitRead/SubmitWrite only queue their I/O in the ring. (Another
// backend's submission on the same ring may start them earlier.)
func (b *Backend) Plug() {
	if a := b.ring; a != nil {
		a.mu.Lock()
		if !b.detached {
			if b.plugs == 0 {
				a.plugged++
			}
			b.plugs++
		}
		a.mu.Unlock()
	}
}

// Unplug implements blockdev.AsyncBatcher: releasing the last plug submits
// every queued I/O with one io_uring_enter.
//
// Completions the submission found already posted (a RAM-backed device
// completes during io_uring_enter) are finished right here, on the
// caller's goroutine, before Unplug returns: their Completion.IODone runs
// inside Unplug (see sharedRing).
func (b *Backend) Unplug() {
	if a := b.ring; a != nil {
		submitted, paused := false, false
		a.mu.Lock()
		if b.plugs > 0 {
			b.plugs--
			if b.plugs == 0 {
				a.plugged--
				// What completes during the submission is reaped right
				// after it: no signal for it (reapInline resumes).
				paused = a.evrc != nil && a.ring.PauseEventFD()
				_, _ = a.ring.Submit()
				submitted = true
			}
		}
		a.mu.Unlock()
		if submitted {
			a.reapInline(paused)
		}
	}
}

// Poll implements blockdev.Poller: the completions the backend's ring
// already holds are finished on the calling goroutine, unless the reaper
// is taking them right now; it returns how many. Where they were
// signalled on the eventfd, their count is taken back (one read), so the
// reaper is not woken for them. After Close it finds nothing.
func (b *Backend) Poll() int {
	if a := b.ring; a != nil {
		return a.reapInline(false)
	}
	return 0
}

// finishAsync counts an I/O all of whose entries transferred everything.
// An I/O with an entry that did not (short transfer, EINVAL from a
// stricter O_DIRECT alignment, EAGAIN, EOPNOTSUPP for RWF_DSYNC, a real
// I/O error such as ENOSPC) is redone whole with redoAsync instead.
func (b *Backend) finishAsync(s *asyncSlot) {
	b.stats.direct.Add(1)
	b.stats.async.Add(1)
	if s.fixed {
		b.stats.fixedIOs.Add(1)
	}
	if s.write && s.flags&blockdev.WriteFUA != 0 {
		b.stats.fuaNative.Add(1)
	}
}

// redoAsync carries out an I/O the ring did not complete through the
// blocking path, which owns the fallbacks and the error mapping. The
// caller holds b.mu for reading (taken at submission). It is rare.
func (b *Backend) redoAsync(s *asyncSlot) error {
	v := [1][]byte{s.buf}
	if s.write {
		return b.writeLocked(v[:], s.off, s.flags)
	}
	return b.xfer(v[:], s.off, kindRead)
}
