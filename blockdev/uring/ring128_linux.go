package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
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
	fd             int
	sqMem, cqMem   []byte
	sqeMem         []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []SQE128
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE
	pending        uint32 // handed out by Next and not yet submitted
}

// NewSQE128 sets up a ring with at least entries 128-byte submission
// entries (the CQ gets twice as many). flags are extra IORING_SETUP_*
// flags (SetupCoopTaskrun, SetupSingleIssuer); SetupSQE128 is implied.
// Kernels before 5.19 fail with EINVAL.
func NewSQE128(entries int, flags uint32) (*Ring128, error) {
	p := params{flags: flags | SetupSQE128}
	fd, _, e := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		if e == syscall.ENOSYS || e == syscall.EPERM {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, e)
		}
		return nil, fmt.Errorf("uring: io_uring_setup(SQE128): %w", e)
	}
	r := &Ring128{fd: int(fd)}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring128) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{})))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	prot, flags := syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE
	if r.sqMem, err = syscall.Mmap(r.fd, offSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap SQ ring: %w", err)
	}
	if single {
		r.cqMem = r.sqMem
	} else if r.cqMem, err = syscall.Mmap(r.fd, offCQRing, cqSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap CQ ring: %w", err)
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(SQE128{}))
	if r.sqeMem, err = syscall.Mmap(r.fd, offSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("uring: mmap SQEs: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE128)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	return nil
}

// FD is the ring's file descriptor.
func (r *Ring128) FD() int { return r.fd }

// Entries is the number of submission entries.
func (r *Ring128) Entries() int { return len(r.sqes) }

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

// Reap copies available completions into out and consumes them; it
// returns how many. Reaper side; never blocks.
func (r *Ring128) Reap(out []CQE) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail && n < len(out); head, n = head+1, n+1 {
		out[n] = r.cqes[head&r.cqMask]
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
}

// Close unmaps the rings and closes the descriptor. Closing a ring makes
// the kernel cancel what is still in flight on it (for ublk: the queue's
// commands, which is how the driver learns its server is gone).
func (r *Ring128) Close() error {
	shared := r.cqMem != nil && r.sqMem != nil && &r.cqMem[0] == &r.sqMem[0]
	if r.sqeMem != nil {
		_ = syscall.Munmap(r.sqeMem)
	}
	if r.cqMem != nil && !shared {
		_ = syscall.Munmap(r.cqMem)
	}
	if r.sqMem != nil {
		_ = syscall.Munmap(r.sqMem)
	}
	r.sqeMem, r.cqMem, r.sqMem = nil, nil, nil
	if r.fd >= 0 {
		err := syscall.Close(r.fd)
		r.fd = -1
		return err
	}
	return nil
}
