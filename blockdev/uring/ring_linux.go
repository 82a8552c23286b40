package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// System call numbers: io_uring came after the per-architecture tables
// were unified, so they are the same on every Linux architecture.
const (
	sysSetup    = 425
	sysEnter    = 426
	sysRegister = 427
)

// mmap offsets and flags (include/uapi/linux/io_uring.h).
const (
	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	featSingleMmap = 1 << 0

	enterGetEvents = 1 << 0
	enterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG (5.11): arg is a getEventsArg

	registerBuffers   = 0
	unregisterBuffers = 1
	registerEventFD   = 4

	cqEventFDDisabled = 1 << 0 // IORING_CQ_EVENTFD_DISABLED in the CQ ring's flags (5.8)
)

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32 // min_wait_usec (6.12), 0
	ts        uint64 // *kernelTimespec
}

type kernelTimespec struct{ sec, nsec int64 }

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// Ring is one io_uring instance with 64-byte submission entries.
type Ring struct {
	ringCore[SQE]
}

// New sets up a ring with at least entries submission entries (the kernel
// rounds up to a power of two; the CQ gets twice as many).
func New(entries int) (*Ring, error) { return NewFlags(entries, 0) }

// NewFlags is New with IORING_SETUP_* flags (SetupCoopTaskrun). A kernel
// that does not know a flag fails it with an error wrapping EINVAL.
func NewFlags(entries int, flags uint32) (*Ring, error) {
	r := &Ring{}
	if err := r.setup(entries, flags); err != nil {
		return nil, err
	}
	return r, nil
}

// Prepare fills the next free submission entry with e (not yet visible to
// the kernel until Submit). Submitter side.
func (r *Ring) Prepare(e *SQE) error {
	tail := *r.sqTail + r.pending // only the submitter writes the tail
	if tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		return ErrFull
	}
	i := tail & r.sqMask
	r.sqes[i] = *e
	r.sqArray[i] = i
	r.pending++
	return nil
}

// Space is how many more entries Prepare takes before Submit. Submitter
// side.
func (r *Ring) Space() int {
	return len(r.sqes) - int(*r.sqTail+r.pending-atomic.LoadUint32(r.sqHead))
}

// Submit publishes the prepared entries and tells the kernel about them
// and about any entry an earlier failed Submit left unconsumed. It returns
// how many the kernel consumed. Submitter side.
//
// Submission does not wait (no IORING_ENTER_GETEVENTS): io_uring issues
// each entry without blocking and hands what would block to its own
// workers, so the call is made without entering the Go scheduler's
// syscall state (see internal/nbsys: that would wake the runtime's
// monitor thread on every I/O of an otherwise idle target).
func (r *Ring) Submit() (int, error) {
	tail := *r.sqTail + r.pending
	atomic.StoreUint32(r.sqTail, tail)
	r.pending = 0
	// Everything the kernel has not consumed yet, including entries a
	// failed earlier call left in the ring.
	n := tail - atomic.LoadUint32(r.sqHead)
	if n == 0 {
		return 0, nil
	}
	for {
		got, _, e := syscall.RawSyscall6(sysEnter, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
		switch e {
		case 0:
			return int(got), nil
		case syscall.EINTR:
			continue
		default:
			return 0, fmt.Errorf("uring: io_uring_enter: %w", e)
		}
	}
}

// Wait blocks until at least one completion is available. Reaper side.
func (r *Ring) Wait() error {
	for {
		if atomic.LoadUint32(r.cqTail) != *r.cqHead {
			return nil
		}
		_, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), 0, 1, enterGetEvents, 0, 0)
		if e == 0 || e == syscall.EINTR || e == syscall.EAGAIN || e == syscall.EBUSY {
			continue
		}
		return fmt.Errorf("uring: io_uring_enter(GETEVENTS): %w", e)
	}
}

// WaitFor blocks until at least one completion is available or timeout
// (> 0) passes; it reports whether one is. The wait is a blocking system
// call (the scheduler's syscall state: the goroutine's P goes to others).
// It may run while another goroutine reaps.
// A kernel without IORING_ENTER_EXT_ARG (before 5.11) waits without a
// bound. Reaper side.
func (r *Ring) WaitFor(timeout time.Duration) (bool, error) {
	// Loads of the head are atomic here: another goroutine may be the
	// reaper meanwhile.
	if atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead) {
		return true, nil
	}
	ts := kernelTimespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
	arg := getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
	_, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), 0, 1, enterGetEvents|enterExtArg,
		uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	switch e {
	case 0, syscall.EINTR, syscall.ETIME, syscall.EAGAIN, syscall.EBUSY:
		return atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead), nil
	case syscall.EINVAL: // before 5.11
		if err := r.Wait(); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, fmt.Errorf("uring: io_uring_enter(GETEVENTS): %w", e)
}

// RegisterEventFD makes the kernel signal the eventfd fd whenever it posts
// a completion to the ring (IORING_REGISTER_EVENTFD, Linux 5.2+), so that
// a reaper can wait for completions in Go's network poller instead of
// blocking an OS thread in io_uring_enter. At most one per ring; it stays
// registered until Close.
func (r *Ring) RegisterEventFD(fd int) error {
	fd32 := int32(fd)
	_, _, e := syscall.Syscall6(sysRegister, uintptr(r.fd), registerEventFD, uintptr(unsafe.Pointer(&fd32)), 1, 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: register eventfd: %w", e)
	}
	return nil
}

// PauseEventFD stops the kernel signalling the registered eventfd for the
// completions it posts from now on (IORING_CQ_EVENTFD_DISABLED, Linux
// 5.8+), for a caller about to reap what its own submission completes;
// ResumeEventFD undoes it. False: the kernel has no such flag (nothing
// changed). Completions posted while paused raise no signal at all, so
// after ResumeEventFD the caller must look at the CQ once more (Reap).
// ResumeEventFD is a full barrier; the kernel commits the CQ tail
// (io_commit_cqring) before it reads the flag (io_eventfd_signal). In
// 6.12 io_cqring_wake's wq_has_sleeper puts an smp_mb between the two; in
// 6.1 the eventfd signal comes first and only an unlock then a lock of
// completion_lock lie between them — a full barrier on amd64 (locked
// instructions) and arm64 (release then acquire), not in the kernel's
// memory model in general. So on amd64 and arm64 either that look sees
// the completion or the kernel saw the flag cleared and signals.
//
// Several goroutines may pause and resume concurrently (the flag is one
// bit: a resume also ends another's pause early, which costs only a
// signal), as long as each that paused resumes and then looks.
func (r *Ring) PauseEventFD() bool {
	if r.cqFlags == nil {
		return false
	}
	atomic.OrUint32(r.cqFlags, cqEventFDDisabled)
	return true
}

// EventFDPaused reports whether the flag PauseEventFD sets is set (tests).
func (r *Ring) EventFDPaused() bool {
	return r.cqFlags != nil && atomic.LoadUint32(r.cqFlags)&cqEventFDDisabled != 0
}

// ResumeEventFD ends a PauseEventFD (see there for the look that must
// follow).
func (r *Ring) ResumeEventFD() {
	if r.cqFlags != nil {
		atomic.AndUint32(r.cqFlags, ^uint32(cqEventFDDisabled))
	}
}

// RegisterBuffers registers bufs as fixed buffers (index = position) for
// OpReadFixed / OpWriteFixed. The memory stays pinned until
// UnregisterBuffers or Close.
func (r *Ring) RegisterBuffers(bufs [][]byte) error {
	iov := make([]syscall.Iovec, len(bufs))
	for i, b := range bufs {
		iov[i].Base = unsafe.SliceData(b)
		iov[i].SetLen(len(b))
	}
	_, _, e := syscall.Syscall6(sysRegister, uintptr(r.fd), registerBuffers, uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)), 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: register buffers: %w", e)
	}
	return nil
}

// UnregisterBuffers drops the fixed buffers.
func (r *Ring) UnregisterBuffers() error {
	_, _, e := syscall.Syscall6(sysRegister, uintptr(r.fd), unregisterBuffers, 0, 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("uring: unregister buffers: %w", e)
	}
	return nil
}
