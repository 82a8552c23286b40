package ublkback_test

import (
	"bytes"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/ublk"
)

// loopCompleter is a ublk queue's Completer as the queue loop sees it:
// completions on a channel; one delivered outside the loop's own Flush
// or Arm, and Wake, write an eventfd (the ring's wake-up read).
type loopCompleter struct {
	done   chan completion
	efd    int
	inLoop atomic.Bool // the loop is inside Flush or Arm
}

func (c *loopCompleter) Complete(tag uint16, errno syscall.Errno) {
	c.done <- completion{tag, errno}
	if !c.inLoop.Load() {
		c.Wake()
	}
}

func (c *loopCompleter) Wake() {
	one := [8]byte{1}
	_, _ = unix.Write(c.efd, one[:])
}

// loop runs the ublk queue loop over q until n requests completed:
// Flush, Arm, then sleep in poll(2) on the completer's eventfd and the
// descriptor Arm gave, as ublk's ring does. It returns the completions.
func (c *loopCompleter) loop(t *testing.T, q ublk.BackendQueue, n int) []completion {
	t.Helper()
	w := q.(ublk.Waiter)
	var got []completion
	take := func() {
		for {
			select {
			case x := <-c.done:
				got = append(got, x)
			default:
				return
			}
		}
	}
	signalled := false
	deadline := time.Now().Add(time.Minute)
	for {
		c.inLoop.Store(true)
		w.Flush()
		take()
		fd, _ := w.Arm(signalled)
		c.inLoop.Store(false)
		signalled = false
		take()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d requests completed in a minute", len(got), n)
		}
		pfd := []unix.PollFd{{Fd: int32(c.efd), Events: unix.POLLIN}}
		if fd >= 0 {
			pfd = append(pfd, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(pfd, 1000); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if pfd[0].Revents&unix.POLLIN != 0 {
			var v [8]byte
			_, _ = unix.Read(c.efd, v[:])
		}
		signalled = len(pfd) > 1 && pfd[1].Revents&unix.POLLIN != 0
	}
}

// TestWaiterLoopAcrossQPError: a ublk queue loop that waits for the
// initiator queue's CQ descriptor itself (ublk.Waiter over the soft
// provider's detached CQ, both profiles) completes writes and reads with
// their data; reads in flight when every QP fails are replayed after the
// reconnect and complete with the right bytes (the loop gives up the
// dead queue's descriptor and takes the new queue's); writes after the
// reconnect reach the target. (That the loop, not the initiator's queue
// goroutine, reaps the completions is initiator's
// TestSubmitterArmWaitsOnCaller.)
func TestWaiterLoopAcrossQPError(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			disk, g, rec, s, b := gatedRig(t, pr.p, "waiter:4420")
			efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(efd) })
			c := &loopCompleter{done: make(chan completion, 8), efd: efd}
			q, err := b.OpenQueue(0, 8, c)
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			const n, size = 8, 4096
			want := func(tag, gen int) []byte {
				p := make([]byte, size)
				for i := range p {
					p[i] = byte(i*13 + tag*5 + gen)
				}
				return p
			}
			submit := func(op ublk.Op, fill func(tag int, buf []byte)) []ublk.Request {
				return submitTags(q, op, n, size, fill)
			}
			check := func(what string, got []completion) {
				t.Helper()
				seen := map[uint16]bool{}
				for _, x := range got {
					if x.errno != 0 || seen[x.tag] {
						t.Fatalf("%s: tag %d errno %v (seen before: %v)", what, x.tag, x.errno, seen[x.tag])
					}
					seen[x.tag] = true
				}
			}
			// Steady state: 20 rounds of writes and reads.
			for gen := range 20 {
				submit(ublk.OpWrite, func(tag int, buf []byte) { copy(buf, want(tag, gen)) })
				check("write", c.loop(t, q, n))
				submit(ublk.OpRead, func(_ int, buf []byte) { clear(buf) })
				check("read", c.loop(t, q, n))
				for tag := range n {
					if !bytes.Equal(q.Buffer(uint16(tag))[:size], want(tag, gen)) {
						t.Fatalf("round %d tag %d: read other data", gen, tag)
					}
				}
			}
			// Reads held at the target while every QP fails.
			g.mu.Lock()
			g.open = false
			g.mu.Unlock()
			connects := s.Paths()[0].Connects
			submit(ublk.OpRead, func(_ int, buf []byte) {
				for i := range buf {
					buf[i] = 0xEE
				}
			})
			q.(ublk.Flusher).Flush()
			g.waitHeld(t, 1)
			if rec.injectAll() == 0 {
				t.Fatal("no QP to inject an error into")
			}
			g.release()
			check("read across the QP error", c.loop(t, q, n))
			for tag := range n {
				if !bytes.Equal(q.Buffer(uint16(tag))[:size], want(tag, 19)) {
					t.Fatalf("tag %d: read across the QP error returned other data", tag)
				}
			}
			if s.Paths()[0].Connects == connects || s.Replays() == 0 {
				t.Fatalf("connects %d → %d, replays %d: no reconnect and replay", connects, s.Paths()[0].Connects, s.Replays())
			}
			submit(ublk.OpWrite, func(tag int, buf []byte) { copy(buf, want(tag, 100)) })
			check("write after reconnect", c.loop(t, q, n))
			for tag := range n {
				got := make([]byte, size)
				if err := disk.ReadAt([][]byte{got}, uint64(tag*size/512)); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want(tag, 100)) {
					t.Fatalf("tag %d: the target holds other data after the write", tag)
				}
			}
			q.(ublk.Waiter).Release()
		})
	}
}
