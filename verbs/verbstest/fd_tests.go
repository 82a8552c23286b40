package verbstest

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/verbs"
)

// testNotifyFD: a detached CQ's armed event makes its descriptor readable
// and sends no token; TakeNotify consumes it exactly once; after
// AttachNotify tokens reach Notify's channel again (verbs.FDNotifier).
// Skipped for a provider that does not implement it.
func testNotifyFD(t *testing.T, e Env) {
	p := connect(t, e, pairConfig{})
	n, isFD := p.c.scq.(verbs.FDNotifier)
	if !isFD {
		t.Skipf("%T does not implement verbs.FDNotifier", p.c.scq)
	}
	fd, err := n.DetachNotify()
	if err != nil {
		t.Fatalf("DetachNotify: %v", err)
	}
	if readable(t, fd, 0) {
		t.Fatal("descriptor readable before any event")
	}
	write := signaledWriter(p)
	// Arm on an empty CQ, then complete: the event is on the descriptor.
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	write(1)
	if !readable(t, fd, 10*time.Second) {
		t.Fatal("no completion event on the descriptor")
	}
	if !n.TakeNotify() {
		t.Fatal("TakeNotify found no event on a readable descriptor")
	}
	if n.TakeNotify() {
		t.Fatal("TakeNotify took one event twice")
	}
	if readable(t, fd, 0) {
		t.Fatal("descriptor still readable after TakeNotify")
	}
	select {
	case <-p.c.scq.Notify():
		t.Fatal("a detached CQ sent a token on Notify's channel")
	default:
	}
	expectStatus(t, pollOne(t, p.c.scq), ok(1))
	// Unarmed: a completion raises no event.
	write(2)
	expectStatus(t, pollOne(t, p.c.scq), ok(2))
	if readable(t, fd, 0) || n.TakeNotify() {
		t.Fatal("an unarmed CQ raised an event")
	}
	// Attached again: tokens go to Notify's channel.
	if err := n.AttachNotify(); err != nil {
		t.Fatalf("AttachNotify: %v", err)
	}
	if err := p.c.scq.ReqNotify(); err != nil {
		t.Fatalf("ReqNotify: %v", err)
	}
	write(3)
	select {
	case <-p.c.scq.Notify():
	case <-p.ctx.Done():
		t.Fatal("no token on Notify's channel after AttachNotify")
	}
	expectStatus(t, waitWC(t, p.ctx, p.c.scq, 1), ok(3))
}

// pollOne polls cq until it returns one completion (the CQ is detached:
// verbs.Wait's token would never come).
func pollOne(t *testing.T, cq verbs.CompletionQueue) []verbs.WorkCompletion {
	t.Helper()
	wc := make([]verbs.WorkCompletion, 1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wc)
		if err != nil {
			t.Fatalf("Poll: %v", err)
		}
		if n == 1 {
			return wc
		}
		runtime.Gosched()
	}
	t.Fatal("no completion within 10s")
	return nil
}

// readable polls fd for input for up to wait (0: just look).
func readable(t *testing.T, fd int, wait time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		ms := max(int(time.Until(deadline)/time.Millisecond), 0)
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		k, err := unix.Poll(pfd, ms)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		return k > 0 && pfd[0].Revents&unix.POLLIN != 0
	}
}
