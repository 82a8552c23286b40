package initiator

import (
	"bytes"
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
	for range reqs {
		select {
		case got := <-done:
			if got.Err != nil {
				t.Fatal(got.Err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("after Release the queue's goroutine never finished the burst")
		}
	}
}
