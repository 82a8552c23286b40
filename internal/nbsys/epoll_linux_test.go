package nbsys

import (
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEpollWait: an idle set is reported after the timeout, a readable
// descriptor at once with its event, and a goroutine asleep in EpollWait
// (keeping its P) does not hold up a stop-the-world: runtime.GC returns
// while it sleeps for an hour (the preemption signal ends the wait).
func TestEpollWait(t *testing.T) {
	r, w := pipe(t)
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, r, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(r)}); err != nil {
		t.Fatal(err)
	}
	evs := make([]unix.EpollEvent, 4)
	// A signal may end the wait first (EINTR: the runtime preempts a
	// goroutine that holds its P in a raw call); the contract is to loop.
	if n, e := untilNotEINTR(func() (int, syscall.Errno) { return EpollWait(ep, evs, time.Millisecond) }); e != 0 || n != 0 {
		t.Fatalf("idle set: %d, %v; want 0 (timeout)", n, e)
	}
	if n, e := EpollWait(ep, nil, time.Millisecond); e != syscall.EINVAL || n != 0 {
		t.Fatalf("no room for events: %d, %v; want EINVAL", n, e)
	}

	gcWhileAsleep(t, func() (int, syscall.Errno) { return EpollWait(ep, evs, time.Hour) }, func() { Write(uintptr(w), []byte{1}) })
	if evs[0].Fd != int32(r) || evs[0].Events&unix.EPOLLIN == 0 {
		t.Fatalf("event %+v; want EPOLLIN on %d", evs[0], r)
	}
}
