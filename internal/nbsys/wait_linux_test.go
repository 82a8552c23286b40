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
	if n, e := Poll(fds, time.Millisecond); e != 0 || n != 0 {
		t.Fatalf("idle pipe: %d, %v; want 0 (timeout)", n, e)
	}
	Write(uintptr(w), []byte{1})
	if n, e := Poll(fds, time.Hour); e != 0 || n != 1 || fds[0].Revents&0x1 == 0 {
		t.Fatalf("readable pipe: %d, %v, revents %#x", n, e, fds[0].Revents)
	}
	var b [1]byte
	Read(uintptr(r), b[:])

	r2, w2 := pipe(t)
	asleep, done := make(chan struct{}), make(chan syscall.Errno, 1)
	go func() {
		runtime.LockOSThread() // as the poll loops it is for
		defer runtime.UnlockOSThread()
		close(asleep)
		f := []PollFd{{Fd: int32(r2), Events: 0x1}}
		for {
			n, e := Poll(f, time.Hour)
			if e == syscall.EINTR {
				continue
			}
			if n > 0 || e != 0 {
				done <- e
				return
			}
		}
	}()
	<-asleep
	for range 3 {
		runtime.GC() // would wait for the hour if the sleeper kept the world from stopping
	}
	Write(uintptr(w2), []byte{1})
	if e := <-done; e != 0 {
		t.Fatalf("poll: %v", e)
	}
}
