package rdma

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/verbs"
)

// epollWaiter is how a poll group sleeps when its queues' CQs can be
// waited for on a descriptor (verbs.FDNotifier): the group goroutine
// blocks in epoll_wait on one epoll set holding every such CQ's
// completion-channel descriptor and an eventfd (the bell), so a CQ event
// wakes the group's thread directly — no event goroutine, no channel
// hand-off, no second read finding the channel empty. Anything else that
// needs the group (a backend completion, a control event, a new queue)
// rings: it sets rung and writes the eventfd only if the group is asleep,
// so a busy group is rung with two atomic operations and no system call.
//
// Ownership: epfd, cqs and events belong to the group goroutine; ring is
// safe from any goroutine, also after close (it then does nothing).
type epollWaiter struct {
	epfd, bell int
	events     []unix.EpollEvent
	cqs        map[int32]verbs.FDNotifier // by descriptor

	asleep atomic.Bool // the group is in (or about to enter) epoll_wait
	rung   atomic.Bool // something rang since the group last cleared it
	// writers counts rings between their check of closed and their
	// eventfd write; close waits for it to drain before it closes the
	// descriptor, so a late ring never writes into a reused descriptor.
	writers atomic.Int32
	closed  atomic.Bool
	// blockingWaits counts the sleeps that ran out of raw waits (tests).
	blockingWaits atomic.Int64
}

func newEpollWaiter() (*epollWaiter, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("rdma: poll group epoll_create1: %w", err)
	}
	bell, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("rdma: poll group eventfd: %w", err)
	}
	w := &epollWaiter{epfd: epfd, bell: bell, events: make([]unix.EpollEvent, 64),
		cqs: map[int32]verbs.FDNotifier{}}
	if err := w.add(int32(bell)); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

func (w *epollWaiter) add(fd int32) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
	if err := unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		return fmt.Errorf("rdma: poll group epoll_ctl add: %w", err)
	}
	return nil
}

// attach detaches the CQ's event delivery from its provider and adds its
// descriptor to the set. Group goroutine.
func (w *epollWaiter) attach(n verbs.FDNotifier) error {
	fd, err := n.DetachNotify()
	if err != nil {
		return err
	}
	if err := w.add(int32(fd)); err != nil {
		_ = n.AttachNotify()
		return err
	}
	w.cqs[int32(fd)] = n
	return nil
}

// detach takes the CQ out of the set and gives its events back to its
// provider (before the queue's teardown waits on Notify). Group goroutine.
func (w *epollWaiter) detach(n verbs.FDNotifier) error {
	for fd, m := range w.cqs {
		if m == n {
			delete(w.cqs, fd)
			_ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
			break
		}
	}
	return n.AttachNotify()
}

// ring wakes the group; never blocks; any goroutine.
func (w *epollWaiter) ring() {
	w.rung.Store(true)
	if !w.asleep.Load() {
		return
	}
	w.writers.Add(1)
	if !w.closed.Load() {
		one := [8]byte{1}
		// Fails only if the counter would overflow: the group is then
		// woken anyway.
		_, _ = unix.Write(w.bell, one[:])
	}
	w.writers.Add(-1)
}

// disarm clears rung before the group's last pass ahead of sleeping: a
// ring after it keeps the group awake (sleep returns at once).
func (w *epollWaiter) disarm() { w.rung.Store(false) }

// sleep blocks until a CQ event or a ring, taking the CQ events it
// reports. Returns at once if rung since disarm. Group goroutine.
func (w *epollWaiter) sleep() error {
	w.asleep.Store(true)
	if w.rung.Load() {
		w.asleep.Store(false)
		return nil
	}
	n, err := w.wait()
	w.asleep.Store(false)
	if err != nil {
		return err
	}
	for i := range n {
		fd := w.events[i].Fd
		if fd == int32(w.bell) {
			var b [8]byte
			_, _ = unix.Read(w.bell, b[:])
			continue
		}
		if cq := w.cqs[fd]; cq != nil {
			cq.TakeNotify()
		}
	}
	return nil
}

// Raw waits: an idle group first sleeps in up to rawWaits epoll_pwait
// calls of at most rawWait each that keep its P (nbsys.EpollWait), and
// only then in a blocking epoll_wait.
//
// Why: a goroutine asleep in a blocking system call is, to the runtime,
// one whose P may be taken. With no P idle (GOMAXPROCS 1 on a one-CPU
// guest) the monitor thread (sysmon) takes it after one 20 µs tick, hands
// it off, finds every P idle and sleeps deeply; the group's wake-up then
// finds its P gone, takes an idle one and wakes sysmon, which restarts
// polling every 20 µs — per I/O at low queue depth. In the lab (one-vCPU
// target guest, QD1) the target's sysmon thread switched ~18,000 times
// and used ~24 % of the guest's CPU per 10 s job, more than the threads
// doing the I/O (runs 2026-12-06-0226, -0256). Kept by a raw call the P
// is never taken from the sleep, sysmon never sleeps deeply while the
// group does, and its ticks back off to 10 ms. The bound (a timeout, and
// the runtime's preemption signal, which ends the wait with EINTR) lets a
// stop-the-world through and lets an idle group fall back, after
// rawWaits × rawWait at most, to the blocking wait that costs nothing
// while the target idles. The group's P is reserved (nbsys.ReserveP at
// newPollGroup), so everything else still has one.
const (
	rawWait  = 10 * time.Millisecond
	rawWaits = 3
)

// wait is the group's sleep proper: raw waits, then a blocking one. It
// returns the number of events in w.events.
func (w *epollWaiter) wait() (int, error) {
	for range rawWaits {
		n, e := nbsys.EpollWait(w.epfd, w.events, rawWait)
		if n > 0 {
			return n, nil
		}
		if e != 0 && e != unix.EINTR {
			return 0, fmt.Errorf("rdma: poll group epoll_pwait: %w", e)
		}
		runtime.Gosched() // the runtime may have asked for the P
	}
	w.blockingWaits.Add(1)
	for {
		n, err := unix.EpollWait(w.epfd, w.events, -1)
		if !errors.Is(err, unix.EINTR) {
			if err != nil {
				return 0, fmt.Errorf("rdma: poll group epoll_wait: %w", err)
			}
			return n, nil
		}
	}
}

// close releases the descriptors once no ring is writing. Group goroutine,
// after every queue left the group.
func (w *epollWaiter) close() {
	w.closed.Store(true)
	for w.writers.Load() != 0 {
		runtime.Gosched()
	}
	unix.Close(w.bell)
	unix.Close(w.epfd)
}
