package ublk

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitBackend is a Waiter: Flush sends what Submit held to a "device"
// (the test), which answers a burst by making an eventfd readable; the
// queue goroutine polls that eventfd in its ring, and the answers are
// completed inside Flush or Arm — never from another goroutine.
type waitBackend struct {
	fakeBackend
	efd      int
	held     []uint16    // queue goroutine only
	sent     []uint16    // with the device; queue goroutine only
	device   chan int    // burst sizes sent (to the test)
	onQueue  atomic.Bool // inside Flush or Arm (the queue goroutine)
	offQueue atomic.Int32
	released atomic.Int32
	arms     atomic.Int32
}

func (b *waitBackend) Submit(tag uint16, _ *Request) { b.held = append(b.held, tag) }

func (b *waitBackend) Flush() {
	b.onQueue.Store(true)
	defer b.onQueue.Store(false)
	b.answer()
	if len(b.held) > 0 {
		b.sent = append(b.sent, b.held...)
		b.device <- len(b.held)
		b.held = b.held[:0]
	}
}

func (b *waitBackend) Arm(signalled bool) (int, uint64) {
	b.onQueue.Store(true)
	defer b.onQueue.Store(false)
	b.arms.Add(1)
	b.answer()
	if len(b.sent) == 0 {
		return -1, 0
	}
	return b.efd, 7
}

// answer completes everything sent once the device has answered.
func (b *waitBackend) answer() {
	var v [8]byte
	if n, err := unix.Read(b.efd, v[:]); err != nil || n != 8 {
		return
	}
	for _, tag := range b.sent {
		b.done.Complete(tag, 0)
	}
	b.sent = b.sent[:0]
}

func (b *waitBackend) Release() { b.released.Add(1) }

// waitCompleter checks that every completion of a waitBackend comes from
// inside its Flush or Arm.
type waitCompleter struct {
	*queue
	b *waitBackend
}

func (c waitCompleter) Complete(tag uint16, errno syscall.Errno) {
	if !c.b.onQueue.Load() {
		c.b.offQueue.Add(1)
	}
	c.queue.Complete(tag, errno)
}

// TestQueueWaitsOnWaiterDescriptor: with a Waiter backend the queue
// goroutine sleeps on the backend's descriptor in its ring (the fake
// kernel's poll of the eventfd) as well as on block requests: bursts
// answered by the device while the queue sleeps are committed, every
// completion from inside Flush or Arm, and the ring's wake-up eventfd is
// never written (nothing woke the queue but the poll). The queue
// releases the Waiter when it stops.
func TestQueueWaitsOnWaiterDescriptor(t *testing.T) {
	const depth = 8
	k := newFakeKernel(3, depth)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(efd) })
	b := &waitBackend{efd: efd, device: make(chan int, 4*depth)}
	for range depth {
		b.bufs = append(b.bufs, make([]byte, fakeMaxIO))
	}
	var pollMu sync.Mutex
	armedKey := uint64(0)
	k.pollFn = func(fd int, key uint64) {
		pollMu.Lock()
		defer pollMu.Unlock()
		if fd != efd || key != 7 {
			t.Errorf("poll of fd %d key %d, want %d key 7", fd, key, efd)
		}
		if armedKey == key {
			return // one poll per key at a time, as the kring keeps it
		}
		armedKey = key
		go func() {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				if _, err := unix.Poll(pfd, -1); err == nil || err != unix.EINTR {
					break
				}
			}
			pollMu.Lock()
			armedKey = 0
			pollMu.Unlock()
			k.pollFired()
		}()
	}
	q := newFakeQueue(k, depth)
	q.setBackend(b)
	b.done = waitCompleter{q, b}
	done := runArmed(t, k, q, depth)
	for round := range 5 {
		for tag := range depth {
			k.issue(t, uint16(tag), ioDesc{opFlags: iodOpRead, nrSectors: 1, startSector: uint64(round)})
		}
		for sent := 0; sent < depth; {
			select {
			case n := <-b.device:
				sent += n
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: only %d of %d requests reached the device", round, sent, depth)
			}
		}
		one := [8]byte{1}
		if _, err := unix.Write(efd, one[:]); err != nil { // the device answers the burst
			t.Fatal(err)
		}
		for range depth {
			if ev := k.event(t); ev.op != uIOCommitAndFetchReq || ev.result != 512 {
				t.Fatalf("round %d: %+v", round, ev)
			}
		}
	}
	if n := b.offQueue.Load(); n != 0 {
		t.Fatalf("%d completions came from outside Flush/Arm", n)
	}
	if w := k.wakes.Load(); w != 0 {
		t.Fatalf("the ring's wake-up was used %d times: the poll should have woken the queue", w)
	}
	if b.arms.Load() == 0 {
		t.Fatal("Arm never called")
	}
	q.kill()
	if err := runEnd(t, done, "queue never stopped"); err != nil {
		t.Fatal(err)
	}
	if r := b.released.Load(); r != 1 {
		t.Fatalf("Waiter released %d times, want once", r)
	}
}
