package initiator

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// onCallerNotifier records whether each completion was delivered inside
// the test goroutine's own Flush or Arm (inCall set around them) or by
// another goroutine.
type onCallerNotifier struct {
	inCall    atomic.Bool
	onCaller  atomic.Int32
	elsewhere atomic.Int32
}

func (c *onCallerNotifier) RequestDone(*Request) {
	if c.inCall.Load() {
		c.onCaller.Add(1)
	} else {
		c.elsewhere.Add(1)
	}
}

// TestSubmitterArmWaitsOnCaller: a Submitter that waits for its queue's
// CQ itself (SetWaker, Arm; the descriptor polled by the test as ublk's
// io_uring does) gets every completion on its own goroutine, inside
// Flush or Arm, and the queue's goroutine is never woken: rounds of
// eight reads answered only after the caller slept on the descriptor
// all come back through the caller, with their data. Release hands the
// CQ back: the queue's goroutine then reaps what is in flight.
func TestSubmitterArmWaitsOnCaller(t *testing.T) {
	const bs, blocks, burst = 512, 1024, 8
	r := newFakeRig(t, 16, bs, blocks, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i*7 + 1)
	}
	s := newFakeSession(r, bs, blocks)
	sub, err := s.Submitter(0)
	if err != nil {
		t.Fatal(err)
	}
	var woken atomic.Int32
	sub.SetWaker(func() { woken.Add(1) })
	m := r.c.muxes[0]
	waitMuxIdle(t, m)
	n := &onCallerNotifier{}
	reqs := make([]Request, burst)
	call := func(f func()) {
		n.inCall.Store(true)
		f()
		n.inCall.Store(false)
	}
	round := func(k int) {
		t.Helper()
		r.qp.setAuto(false)
		for i := range reqs {
			reqs[i] = Request{Op: IORead, Off: int64(k*burst+i) * 4096 % int64(bs*blocks), Data: make([]byte, 4096), Notify: n}
			if err := sub.Submit(&reqs[i]); err != nil {
				t.Fatal(err)
			}
		}
		call(sub.Flush)
		var fd int
		call(func() { fd, _ = sub.Arm(false) })
		if fd < 0 {
			t.Fatalf("round %d: Arm with %d commands in flight on a descriptor CQ: fd %d", k, r.qp.heldCount(), fd)
		}
		// The controller answers while the caller sleeps on fd.
		r.qp.setAuto(true)
		r.qp.release()
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for done := 0; done < burst; {
			if _, err := unix.Poll(pfd, int((30 * time.Second).Milliseconds())); err != nil && err != unix.EINTR {
				t.Fatal(err)
			}
			if pfd[0].Revents&unix.POLLIN == 0 {
				t.Fatalf("round %d: the descriptor never became readable with commands answered", k)
			}
			call(sub.Flush)
			call(func() { fd, _ = sub.Arm(true) })
			done = int(n.onCaller.Load()+n.elsewhere.Load()) - k*burst
			if done < burst && fd < 0 {
				t.Fatalf("round %d: %d of %d done and Arm gave no descriptor", k, done, burst)
			}
		}
		for i := range reqs {
			off := int(reqs[i].Off)
			if reqs[i].Err != nil || !bytes.Equal(reqs[i].Data, r.qp.disk[off:off+4096]) {
				t.Fatalf("round %d request %d: err %v, data differs %v", k, i, reqs[i].Err, !bytes.Equal(reqs[i].Data, r.qp.disk[off:off+4096]))
			}
		}
	}
	// The queue's goroutine sleeps idle (waitMuxIdle) and nothing wakes
	// it: the Submitter has a waker, so Flush leaves what is in flight to
	// its Arm, which owns the queue from the first round on.
	for k := range 20 {
		round(k)
	}
	if e := n.elsewhere.Load(); e != 0 {
		t.Fatalf("%d completions delivered off the owner's goroutine (on it: %d)", e, n.onCaller.Load())
	}
	if w := woken.Load(); w != 0 {
		t.Fatalf("the owner was asked to arm %d times though every Arm covered its commands", w)
	}
	if !m.idle.Load() {
		t.Fatal("the queue's goroutine was woken")
	}
	// Release: the queue's goroutine takes the CQ back and finishes a
	// burst left in flight, without the caller.
	r.qp.setAuto(false)
	done := make(chan *Request, burst)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i) * 4096, Data: make([]byte, 4096), Done: done}
		if err := sub.Submit(&reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	sub.Flush()
	sub.Release()
	r.qp.setAuto(true)
	r.qp.release()
	waitDone(t, done, len(reqs), "after Release the queue's goroutine never finished the burst")
}

// waitDone takes n successful requests from done, failing with what if
// they do not come within 30 s.
func waitDone(t *testing.T, done <-chan *Request, n int, what string) {
	t.Helper()
	for range n {
		select {
		case got := <-done:
			if got.Err != nil {
				t.Fatal(got.Err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal(what)
		}
	}
}

// TestSubmitterArmOtherCallers: a Submitter without a waker that issues
// commands on a queue another Submitter owns (whose last Arm found
// nothing in flight, so it claims nothing) wakes the queue's goroutine,
// which asks the owner to arm; the owner's Arm covers the commands, and
// its Flush on the descriptor finishes them.
func TestSubmitterArmOtherCallers(t *testing.T) {
	const bs, blocks = 512, 1024
	r := newFakeRig(t, 16, bs, blocks, 4096, 0)
	s := newFakeSession(r, bs, blocks)
	owner, _ := s.Submitter(0)
	asked := make(chan struct{}, 1)
	owner.SetWaker(func() {
		select {
		case asked <- struct{}{}:
		default:
		}
	})
	waitMuxIdle(t, r.c.muxes[0])
	// The owner takes the queue: one read answered while it sleeps on fd.
	r.qp.setAuto(false)
	done := make(chan *Request, 8)
	first := Request{Op: IORead, Data: make([]byte, 4096), Done: done}
	if err := owner.Submit(&first); err != nil {
		t.Fatal(err)
	}
	owner.Flush()
	fd, key := owner.Arm(false)
	if fd < 0 {
		t.Fatal("the owner got no descriptor")
	}
	// A plain Submit wakes the queue's goroutine, which issues it and,
	// the queue being owned, waits in waitOwner (not idle): it releases
	// drive only there once the command is at the controller.
	second := Request{Op: IORead, Off: 4096, Data: make([]byte, 4096), Done: done}
	if err := s.Submit(&second); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); r.qp.heldCount() < 2; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the plain Submit never reached the controller")
		}
	}
	m := r.c.muxes[0]
	m.drive.Lock() // free only once the goroutine waits (in waitOwner)
	idle := m.idle.Load()
	m.drive.Unlock()
	if idle {
		t.Fatal("the queue's goroutine went idle with a command in flight")
	}
	r.qp.setAuto(true)
	r.qp.release()
	pollFD(t, fd)
	owner.Flush()
	if _, k := owner.Arm(true); k != key {
		t.Fatalf("nothing in flight: Arm key %d, want the owner's %d (its poll may stay)", k, key)
	}
	<-done
	<-done
	// Another caller's burst, held at the controller.
	r.qp.setAuto(false)
	other, _ := s.Submitter(0)
	reqs := make([]Request, 4)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i+1) * 4096, Data: make([]byte, 4096), Done: done}
		if err := other.Submit(&reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	other.Flush()
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("another caller's commands in flight on an owned queue: the owner was never asked to arm")
	}
	owner.Flush()
	if fd, _ = owner.Arm(false); fd < 0 {
		t.Fatal("the owner's Arm did not cover the other caller's commands")
	}
	r.qp.setAuto(true)
	r.qp.release()
	pollFD(t, fd)
	owner.Flush()
	waitDone(t, done, len(reqs), "the other caller's requests never completed")
	owner.Release()
}

// pollFD waits until fd is readable.
func pollFD(t *testing.T, fd int) {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(pfd, int((30 * time.Second).Milliseconds()))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if pfd[0].Revents&unix.POLLIN == 0 {
			t.Fatal("the descriptor never became readable")
		}
		return
	}
}
