package uring

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// ringCore is what every io_uring instance consists of, whatever the size
// of its submission entries: the descriptor, the three mappings (SQ ring,
// CQ ring, SQE array) and the indices into them. Ring (64-byte SQEs) and
// Ring128 (128-byte SQEs) embed it and add their own submission methods;
// setup, mapping, reaping and closing are written once here.
type ringCore[S SQE | SQE128] struct {
	fd             int
	sqMem, cqMem   []byte
	sqeMem         []byte
	sqHead, sqTail *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []S
	cqHead, cqTail *uint32
	cqMask         uint32
	cqFlags        *uint32 // the CQ ring's flags (5.8+); nil before
	cqes           []CQE
	pending        uint32 // prepared and not yet submitted (submitter side)
}

// setup creates the ring with at least entries submission entries (the
// kernel rounds up to a power of two; the CQ gets twice as many) and the
// IORING_SETUP_* flags, and maps it. On error nothing stays open.
func (r *ringCore[S]) setup(entries int, flags uint32) error {
	p := params{flags: flags}
	fd, _, e := syscall.Syscall(sysSetup, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		if e == syscall.ENOSYS || e == syscall.EPERM {
			return fmt.Errorf("%w: %v", ErrUnsupported, e)
		}
		return fmt.Errorf("uring: io_uring_setup (flags %#x): %w", flags, e)
	}
	r.fd = int(fd)
	if err := r.mmap(&p); err != nil {
		r.Close()
		return err
	}
	return nil
}

func (r *ringCore[S]) mmap(p *params) error {
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
	var sqe S
	if r.sqeMem, err = syscall.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe)), prot, flags); err != nil {
		return fmt.Errorf("uring: mmap SQEs: %w", err)
	}
	sq := unsafe.Pointer(&r.sqMem[0])
	r.sqHead = (*uint32)(unsafe.Add(sq, p.sqOff.head))
	r.sqTail = (*uint32)(unsafe.Add(sq, p.sqOff.tail))
	r.sqMask = *(*uint32)(unsafe.Add(sq, p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Add(sq, p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*S)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	cq := unsafe.Pointer(&r.cqMem[0])
	r.cqHead = (*uint32)(unsafe.Add(cq, p.cqOff.head))
	r.cqTail = (*uint32)(unsafe.Add(cq, p.cqOff.tail))
	r.cqMask = *(*uint32)(unsafe.Add(cq, p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(unsafe.Add(cq, p.cqOff.cqes)), p.cqEntries)
	if p.cqOff.flags != 0 { // the field is reserved (0) before 5.8
		r.cqFlags = (*uint32)(unsafe.Add(cq, p.cqOff.flags))
	}
	return nil
}

// FD is the ring's file descriptor.
func (r *ringCore[S]) FD() int { return r.fd }

// Entries is the number of submission entries.
func (r *ringCore[S]) Entries() int { return len(r.sqes) }

// Posted reports whether the CQ holds completions not reaped yet. Any
// goroutine; the answer may be stale by the time it is used.
func (r *ringCore[S]) Posted() bool {
	return atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead)
}

// Reap copies available completions into out and consumes them; it
// returns how many. Reaper side; never blocks.
func (r *ringCore[S]) Reap(out []CQE) int {
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
// the kernel cancel what is still in flight on it: the caller guarantees
// nothing is in flight, or accepts that the kernel finishes in-flight I/O
// into memory the caller still owns (for ublk, the cancellation of the
// queue's commands is how the driver learns its server is gone).
func (r *ringCore[S]) Close() error {
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
