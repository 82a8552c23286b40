package ublk

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"
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

	// The backend's descriptor (Waiter): one one-shot POLL_ADD armed
	// for pollKey at a time; fired / failed until pollResult.
	pollArmed     bool
	pollKey       uint64
	fired, failed bool

	// Idle spells (nbsys.IdleWaits): waited says the last submit slept
	// holding the P, so that reap records how that sleep ended; deepWaits
	// counts the sleeps made without the P (for tests).
	idle      nbsys.IdleWaits
	waited    bool
	deepWaits uint64
}

// User data of the ring's own entries; queue commands carry a tag < 2^16.
const (
	wakeUserData       = 1 << 63 // the eventfd read
	pollUserData       = 1 << 62 // | key: the backend descriptor's poll
	pollRemoveUserData = 1 << 61 // the cancel of a replaced poll
	pollKeyMask        = pollRemoveUserData - 1
)

// io_uring opcodes and poll(2) events for the backend's descriptor.
const (
	opPollAdd    = 6 // IORING_OP_POLL_ADD
	opPollRemove = 7 // IORING_OP_POLL_REMOVE
	pollIn       = 0x1
)

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
	if k.idle.Idle() {
		// Sleep without the P until a request, a completion or a wake-up
		// comes, then pass through the scheduler once.
		k.waited = false
		k.deepWaits++
		_, err := k.r.SubmitAndWait(1)
		runtime.Gosched()
		return err
	}
	k.waited = true
	_, err := k.r.SubmitAndWaitFor(parkTimeout)
	return err
}

// parkTimeout bounds one sleep of the queue thread (uring
// SubmitAndWaitFor: the thread keeps its P while it sleeps, and a runtime
// that sends no preemption signals must still get it back).
const parkTimeout = 50 * time.Millisecond

func (k *kring) reap(out []uring.CQE) int {
	n := k.r.Reap(out)
	if k.waited {
		k.waited = false
		k.idle.Ended(n > 0) // any entry, the ring's own included
	}
	j := 0
	for i := range n {
		switch ud := out[i].UserData; {
		case ud == wakeUserData:
			k.armed = false
		case ud&pollUserData != 0:
			if k.pollArmed && ud&pollKeyMask == k.pollKey {
				k.pollArmed = false
				if res := out[i].Res; res >= 0 {
					k.fired = true
				} else if res != -int32(syscall.ECANCELED) {
					k.failed = true
				}
			}
		case ud == pollRemoveUserData: // its own result says nothing
		default:
			out[j] = out[i]
			j++
			continue
		}
	}
	return j
}

// poll arms a one-shot wait for fd readable, named key (masked to 61
// bits), unless one is armed for key already; one armed for another key
// is cancelled first. False when the SQ had no room (nothing armed).
func (k *kring) poll(fd int, key uint64) bool {
	key &= pollKeyMask
	if k.pollArmed && k.pollKey == key {
		return true
	}
	if !k.removePoll() {
		return false
	}
	e := k.r.Next()
	if e == nil {
		return false
	}
	e.Opcode, e.FD, e.RWFlags, e.UserData = opPollAdd, int32(fd), pollIn, pollUserData|key
	k.pollArmed, k.pollKey = true, key
	return true
}

// cancelPoll implements qring.
func (k *kring) cancelPoll() { k.removePoll() }

// removePoll queues the cancel of the armed poll, if any; false when the
// SQ had no room for it (the poll stays armed).
func (k *kring) removePoll() bool {
	if !k.pollArmed {
		return true
	}
	e := k.r.Next()
	if e == nil {
		return false
	}
	e.Opcode, e.FD, e.Addr, e.UserData = opPollRemove, -1, pollUserData|k.pollKey, pollRemoveUserData
	k.pollArmed = false
	return true
}

// pollResult reports and clears what the armed poll did since the last
// call: fired (the descriptor was readable) or failed (the kernel refused
// to wait for it).
func (k *kring) pollResult() (fired, failed bool) {
	fired, failed = k.fired, k.failed
	k.fired, k.failed = false, false
	return fired, failed
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
