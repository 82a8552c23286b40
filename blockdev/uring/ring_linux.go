package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
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

	registerBuffers   = 0
	unregisterBuffers = 1
)

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

// Ring is one io_uring instance.
type Ring struct {
	fd             int
	sqMem, cqMem   []byte
	sqeMem         []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []SQE
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []CQE
	pending        uint32 // prepared and not yet submitted (submitter side)
}

// New sets up a ring with at least entries submission entries (the kernel
// rounds up to a power of two; the CQ gets twice as many).
func New(entries int) (*Ring, error) {
	var p params
	fd, _, e := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		if e == syscall.ENOSYS || e == syscall.EPERM {
			return nil, fmt.Errorf("%w: %v", ErrUnsupported, e)
		}
		return nil, fmt.Errorf("uring: io_uring_setup: %w", e)
	}
	r := &Ring{fd: int(fd)}
	if err := r.mmap(&p); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{})))
	single := p.features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.sqMem, err = syscall.Mmap(r.fd, offSQRing, sqSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		return fmt.Errorf("uring: mmap SQ ring: %w", err)
	}
	if single {
		r.cqMem = r.sqMem
	} else if r.cqMem, err = syscall.Mmap(r.fd, offCQRing, cqSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		return fmt.Errorf("uring: mmap CQ ring: %w", err)
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(SQE{}))
	if r.sqeMem, err = syscall.Mmap(r.fd, offSQEs, sqeSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED|syscall.MAP_POPULATE); err != nil {
		return fmt.Errorf("uring: mmap SQEs: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	return nil
}

// Entries is the number of submission entries.
func (r *Ring) Entries() int { return len(r.sqes) }

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

// Submit publishes the prepared entries and tells the kernel about them
// and about any entry an earlier failed Submit left unconsumed. It returns
// how many the kernel consumed. Submitter side.
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
		got, _, e := syscall.Syscall6(sysEnter, uintptr(r.fd), uintptr(n), 0, 0, 0, 0)
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

// Reap copies available completions into out and consumes them; it
// returns how many. Reaper side; never blocks.
func (r *Ring) Reap(out []CQE) int {
	head := *r.cqHead
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail && n < len(out); head, n = head+1, n+1 {
		out[n] = r.cqes[head&r.cqMask]
	}
	atomic.StoreUint32(r.cqHead, head)
	return n
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

// Close unmaps the rings and closes the descriptor. The caller guarantees
// nothing is in flight (or accepts that the kernel finishes in-flight I/O
// into memory the caller still owns).
func (r *Ring) Close() error {
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
