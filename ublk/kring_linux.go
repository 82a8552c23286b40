package ublk

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev/uring"
	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// kring is a queue's real io_uring: 128-byte SQEs (the control commands
// need them; the I/O commands fit either), plus an eventfd that a
// backend completion writes to wake the queue goroutine out of
// io_uring_enter. One read of the eventfd is kept armed in the ring while
// the goroutine sleeps.
type kring struct {
	r     *uring.Ring128
	efd   int
	armed bool
	val   [8]byte // eventfd read target (lives in the heap object: stable)
}

// wakeUserData marks the eventfd read; queue commands carry a tag < 2^16.
const wakeUserData = 1 << 63

func newKring(entries int) (*kring, error) {
	// COOP_TASKRUN: the driver's task work (delivering requests) runs when
	// the queue thread enters the kernel — it does so every loop — instead
	// of interrupting it with an IPI. Kernels before 5.19 refuse the flag.
	r, err := uring.NewSQE128(entries, uring.SetupCoopTaskrun)
	if errors.Is(err, syscall.EINVAL) {
		r, err = uring.NewSQE128(entries, 0)
	}
	if err != nil {
		return nil, err
	}
	efd, _, e := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC, 0) // blocking: io_uring answers EAGAIN on O_NONBLOCK files
	if e != 0 {
		r.Close()
		return nil, fmt.Errorf("ublk: eventfd: %w", e)
	}
	return &kring{r: r, efd: int(efd)}, nil
}

func (k *kring) next() *uring.SQE128 { return k.r.Next() }

func (k *kring) submit(wait bool) error {
	if !wait {
		_, err := k.r.Submit()
		return err
	}
	if !k.armed {
		e := k.r.Next()
		if e == nil { // full: submit what is there and do not sleep
			_, err := k.r.Submit()
			return err
		}
		e.Opcode, e.FD, e.Off, e.UserData = uring.OpRead, int32(k.efd), ^uint64(0), wakeUserData
		e.Addr, e.Len = uint64(uintptr(unsafe.Pointer(&k.val))), 8
		k.armed = true
	}
	_, err := k.r.SubmitAndWait(1)
	return err
}

func (k *kring) reap(out []uring.CQE) int {
	n := k.r.Reap(out)
	j := 0
	for i := range n {
		if out[i].UserData == wakeUserData {
			k.armed = false
			continue
		}
		out[j] = out[i]
		j++
	}
	return j
}

// wake adds 1 to the eventfd. The eventfd is in blocking mode (see
// newKring), but a write blocks only if the counter would reach 2^64-1,
// which the queue's reads keep it far from: so the write is made without
// entering the scheduler (internal/nbsys), as a backend completion
// goroutine does it once per completed request.
func (k *kring) wake() {
	one := [8]byte{1}
	nbsys.Write(uintptr(k.efd), one[:])
}

func (k *kring) closeRing() error { return k.r.Close() }

func (k *kring) closeWaker() error { return syscall.Close(k.efd) }

func gettid() int { return syscall.Gettid() }
