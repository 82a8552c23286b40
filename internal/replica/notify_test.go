package replica

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// goid is the calling goroutine's id, from its stack header.
func goid() uint64 {
	var b [64]byte
	s := strings.TrimPrefix(string(b[:runtime.Stack(b[:], false)]), "goroutine ")
	id, _ := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	return id
}

// onDone is a Completion that records the goroutine IODone ran on and may
// run more of the test there.
type onDone struct {
	g    chan uint64
	errs chan error
	then func()
}

func newOnDone(then func()) *onDone {
	return &onDone{g: make(chan uint64, 1), errs: make(chan error, 1), then: then}
}

func (d *onDone) IODone(err error) {
	d.g <- goid()
	if d.then != nil {
		d.then()
	}
	d.errs <- err
}

// TestCompletionNotInsideSubmit: a request the session refuses inside its
// Submit (no live path: the leg's loss timeout is nil) completes its
// caller from another goroutine, never inside SubmitWrite, plugged or
// not (blockdev.Async: IODone is never called from inside Submit*).
func TestCompletionNotInsideSubmit(t *testing.T) {
	for _, plugged := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "plugged"}[plugged], func(t *testing.T) {
			fabric := soft.NewFabric()
			n := newReplica(t, fabric, mem.New(1024, 512))
			l := openLeg(t, legConfig(fabric, n))
			n.stop()
			me := goid()
			// Until the session has seen the loss, a write may still be
			// in flight and fail later; keep writing until one fails.
			deadline := time.Now().Add(30 * time.Second)
			for {
				d := newOnDone(nil)
				if plugged {
					l.Plug()
				}
				ok := l.SubmitWrite(make([]byte, 512), 0, 0, d)
				if plugged {
					l.Unplug()
				}
				if !ok {
					if l.down.Load() == nil {
						t.Fatal("SubmitWrite refused with the leg up")
					}
					return
				}
				g := within(t, d.g, 30*time.Second, "IODone")
				err := within(t, d.errs, time.Second, "IODone's result")
				if g == me {
					t.Fatalf("IODone (err %v) ran on the submitting goroutine", err)
				}
				if err != nil {
					return
				}
				if time.Now().After(deadline) {
					t.Fatal("writes kept succeeding after the replica stopped")
				}
			}
		})
	}
}

// TestIODoneReentersLeg: a caller's IODone may submit to the same leg
// again, plugged (the target's poller plugs, submits and unplugs from
// whatever goroutine completes a command), without a deadlock on the
// leg's batch lock or the initiator queue it completes on.
func TestIODoneReentersLeg(t *testing.T) {
	fabric := soft.NewFabric()
	n := newReplica(t, fabric, mem.New(1024, 512))
	l := openLeg(t, legConfig(fabric, n))
	const chain = 200
	done := make(chan error, 1)
	var step func(i int) blockdev.Completion
	step = func(i int) blockdev.Completion {
		return newOnDone(func() {
			if i == chain {
				done <- nil
				return
			}
			l.Plug()
			ok := l.SubmitWrite(bytes.Repeat([]byte{byte(i)}, 512), uint64(i%1024), 0, step(i+1))
			l.Unplug()
			if !ok {
				done <- blockdev.ErrClosed
			}
		})
	}
	l.Plug()
	if !l.SubmitWrite(make([]byte, 512), 0, 0, step(1)) {
		t.Fatal("first write refused")
	}
	l.Unplug()
	if err := within(t, done, 30*time.Second, "a chain of writes each submitted from the last one's IODone"); err != nil {
		t.Fatal(err)
	}
}
