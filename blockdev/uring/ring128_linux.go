package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Ring128 is an io_uring instance with 128-byte submission entries
// (IORING_SETUP_SQE128), for passthrough commands whose payload does not
// fit the 16 bytes of a plain SQE.
//
// Concurrency is that of Ring: one submitter (Next, Submit, SubmitAndWait)
// and one reaper (Wait, Reap, SubmitAndWait) at a time; a caller that both
// submits and reaps from one goroutine (the usual case) may use all of
// them.
type Ring128 struct {
	ringCore[SQE128]
	noExtArg bool // the kernel refused IORING_ENTER_EXT_ARG (SubmitAndWaitFor)
}

// NewSQE128 sets up a ring with at least entries 128-byte submission
// entries (the CQ gets twice as many). flags are extra IORING_SETUP_*
// flags (SetupCoopTaskrun, SetupSingleIssuer); SetupSQE128 is implied.
// Kernels before 5.19 fail with EINVAL.
func NewSQE128(entries int, flags uint32) (*Ring128, error) {
	r := &Ring128{}
	if err := r.setup(entries, flags|SetupSQE128); err != nil {
		return nil, err
	}
	return r, nil
}

// Next returns the next free submission entry, zeroed, for the caller to
// fill in place; it becomes visible to the kernel at the next Submit. It
// returns nil when the SQ is full. Submitter side; allocates nothing.
func (r *Ring128) Next() *SQE128 {
	tail := *r.sqTail + r.pending
	if tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		return nil
	}
	i := tail & r.sqMask
	e := &r.sqes[i]
	*e = SQE128{}
	r.sqArray[i] = i
	r.pending++
	return e
}

// Submit publishes the entries handed out by Next and tells the kernel
// about them. It returns how many the kernel consumed. Submitter side.
func (r *Ring128) Submit() (int, error) { return r.enter(0) }

// SubmitAndWait is Submit followed by waiting until at least minComplete
// completions are available, in one system call. A signal or task work
// may end the wait early (no error): callers reap and loop.
func (r *Ring128) SubmitAndWait(minComplete int) (int, error) { return r.enter(minComplete) }

// SubmitAndWaitFor is SubmitAndWait (one completion) for at most timeout
// (> 0), made without the scheduler's syscall state: the calling
// goroutine keeps its P while it sleeps, and the runtime's preemption
// signal ends the wait early (no error), like the timeout. For a loop
// that never parks in Go (a ublk queue thread), where the syscall state
// lets the runtime's monitor thread take the P from every sleep and poll
// every 20 µs (nbsys.Poll says why). A kernel without
// IORING_ENTER_EXT_ARG (before 5.11) gets SubmitAndWait. Submitter and
// reaper side.
func (r *Ring128) SubmitAndWaitFor(timeout time.Duration) (int, error) {
	if r.noExtArg {
		return r.enter(1)
	}
	tail := *r.sqTail + r.pending
	atomic.StoreUint32(r.sqTail, tail)
	r.pending = 0
	n := tail - atomic.LoadUint32(r.sqHead)
	flags := uintptr(enterGetEvents | enterExtArg)
	minComplete := 1
	if atomic.LoadUint32(r.cqTail) != *r.cqHead {
		if n == 0 {
			return 0, nil
		}
		flags, minComplete = 0, 0 // completions already waiting: do not sleep
	}
	ts := kernelTimespec{sec: int64(timeout / time.Second), nsec: int64(timeout % time.Second)}
	arg := getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&ts)))}
	got, _, e := syscall.RawSyscall6(sysEnter, uintptr(r.fd), uintptr(n), uintptr(minComplete), flags,
		uintptr(unsafe.Pointer(&arg)), unsafe.Sizeof(arg))
	switch e {
	case 0:
		return int(got), nil
	case syscall.EINTR, syscall.ETIME, syscall.EAGAIN, syscall.EBUSY:
		// Nothing was submitted when the call fails: those entries are
		// still in the ring (sqHead did not move) for the next call.
		return 0, nil
	case syscall.EINVAL: // before 5.11: no extended argument
		r.noExtArg = true
		return r.enter(1)
	}
	return 0, fmt.Errorf("uring: io_uring_enter: %w", e)
}

func (r *Ring128) enter(minComplete int) (int, error) {
	tail := *r.sqTail + r.pending
	atomic.StoreUint32(r.sqTail, tail)
	r.pending = 0
	n := tail - atomic.LoadUint32(r.sqHead)
	var flags uintptr
	if minComplete > 0 {
		if atomic.LoadUint32(r.cqTail) != *r.cqHead {
			minComplete = 0 // completions already waiting: do not sleep
		} else {
			flags = enterGetEvents
		}
	}
	if n == 0 && flags == 0 {
		return 0, nil
	}
	for {
		got, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), uintptr(n), uintptr(minComplete), flags, 0, 0)
		switch e {
		case 0:
			return int(got), nil
		case syscall.EINTR:
			if n == 0 {
				return 0, nil // woken for task work or a signal: let the caller reap
			}
			continue
		case syscall.EAGAIN, syscall.EBUSY:
			if n == 0 {
				return 0, nil
			}
			return 0, fmt.Errorf("uring: io_uring_enter: %w", e)
		default:
			return 0, fmt.Errorf("uring: io_uring_enter: %w", e)
		}
	}
}

// Wait blocks until at least one completion is available. Reaper side.
func (r *Ring128) Wait() error {
	for atomic.LoadUint32(r.cqTail) == *r.cqHead {
		if _, err := r.enter(1); err != nil {
			return err
		}
	}
	return nil
}
