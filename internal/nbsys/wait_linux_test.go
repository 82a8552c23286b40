package nbsys

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestPoll: a descriptor with data is reported at once, an idle one after
// the timeout, and a goroutine asleep in Poll (keeping its P) does not
// hold up a stop-the-world: runtime.GC returns while it sleeps for an
// hour (the runtime's preemption signal ends the wait).
func TestPoll(t *testing.T) {
	r, w := pipe(t)
	fds := []PollFd{{Fd: int32(r), Events: 0x1}}
	if n, e := untilNotEINTR(func() (int, syscall.Errno) { return Poll(fds, time.Millisecond) }); e != 0 || n != 0 {
		t.Fatalf("idle pipe: %d, %v; want 0 (timeout)", n, e)
	}
	Write(uintptr(w), []byte{1})
	if n, e := Poll(fds, time.Hour); e != 0 || n != 1 || fds[0].Revents&0x1 == 0 {
		t.Fatalf("readable pipe: %d, %v, revents %#x", n, e, fds[0].Revents)
	}
	var b [1]byte
	Read(uintptr(r), b[:])

	r2, w2 := pipe(t)
	f := []PollFd{{Fd: int32(r2), Events: 0x1}}
	gcWhileAsleep(t, func() (int, syscall.Errno) { return Poll(f, time.Hour) }, func() { Write(uintptr(w2), []byte{1}) })
}

// gcWhileAsleep runs sleep (a raw wait of an hour) on a locked goroutine,
// as the poll loops do, until it reports events or an error other than
// EINTR, and meanwhile runs the garbage collector three times — each
// would wait for the hour if the sleeper kept the world from stopping —
// then wakes it and expects one event and no error.
func gcWhileAsleep(t *testing.T, sleep func() (int, syscall.Errno), wake func()) {
	t.Helper()
	type result struct {
		n int
		e syscall.Errno
	}
	asleep, done := make(chan struct{}), make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(asleep)
		for {
			n, e := sleep()
			if e == syscall.EINTR {
				continue
			}
			if n > 0 || e != 0 {
				done <- result{n, e}
				return
			}
		}
	}()
	<-asleep
	for range 3 {
		runtime.GC()
	}
	wake()
	if r := <-done; r.e != 0 || r.n != 1 {
		t.Fatalf("woken sleeper: %d events, %v; want 1, no error", r.n, r.e)
	}
}

// TestPollBlocking: a descriptor with data is reported at once; a sleep
// in PollBlocking ends when the descriptor becomes readable, and does not
// hold up a stop-the-world either (its goroutine has no P while it
// sleeps).
func TestPollBlocking(t *testing.T) {
	r, w := pipe(t)
	fds := []PollFd{{Fd: int32(r), Events: 0x1}}
	Write(uintptr(w), []byte{1})
	if n, e := PollBlocking(fds); e != 0 || n != 1 || fds[0].Revents&0x1 == 0 {
		t.Fatalf("readable pipe: %d, %v, revents %#x", n, e, fds[0].Revents)
	}
	r2, w2 := pipe(t)
	f := []PollFd{{Fd: int32(r2), Events: 0x1}}
	gcWhileAsleep(t, func() (int, syscall.Errno) { return PollBlocking(f) }, func() { Write(uintptr(w2), []byte{1}) })
}

// untilNotEINTR repeats a raw wait that a signal ended early (EINTR), as
// its callers do, and returns the first other result.
func untilNotEINTR(wait func() (int, syscall.Errno)) (int, syscall.Errno) {
	for {
		if n, e := wait(); e != syscall.EINTR {
			return n, e
		}
	}
}
