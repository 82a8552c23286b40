package initiator

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// newFakeSession is a Session whose one path is the fake rig's controller
// (no connect, no path goroutines: what Submit and Submitter need).
func newFakeSession(r *fakeRig, bs, blocks int) *Session {
	s := &Session{}
	s.table.Store(&pathTable{best: &pathEntry{ctrl: r.c, ns: r.ns}, nsid: fakeNSID, bs: bs, size: int64(bs) * int64(blocks)})
	return s
}

// waitMuxIdle waits until the queue's goroutine has gone to its idle
// sleep (it starts at work: a command pushed before that may be taken by
// it, which is allowed but not what a test of Flush wants).
func waitMuxIdle(t *testing.T, m *queueMux) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !m.idle.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the queue's goroutine never went idle")
		}
		runtime.Gosched()
	}
}

// countNotifier counts completions and the goroutine they came from.
type countNotifier struct {
	mu   sync.Mutex
	n    int
	errs []error
	ch   chan *Request
}

func (c *countNotifier) RequestDone(r *Request) {
	c.mu.Lock()
	c.n++
	if r.Err != nil {
		c.errs = append(c.errs, r.Err)
	}
	c.mu.Unlock()
	if c.ch != nil {
		c.ch <- r
	}
}

func (c *countNotifier) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// TestSubmitterHoldsUntilFlush: requests submitted through a Submitter
// reach the controller only at Flush — the burst of eight in one
// PostSend, issued on the caller's goroutine before Flush returns — and
// commands still in flight after Flush complete through the queue's
// goroutine, which Flush woke from its idle sleep.
func TestSubmitterHoldsUntilFlush(t *testing.T) {
	const bs, blocks = 512, 1024
	r := newFakeRig(t, 16, bs, blocks, 4096, 0)
	held := make(chan struct{}, 1)
	r.qp.heldCh = held
	r.qp.setAuto(false)
	s := newFakeSession(r, bs, blocks)
	sub, err := s.Submitter(0)
	if err != nil {
		t.Fatal(err)
	}
	waitMuxIdle(t, r.c.muxes[0])
	n := &countNotifier{ch: make(chan *Request, 8)}
	reqs := make([]Request, 8)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i) * 4096, Data: make([]byte, 4096), Notify: n}
		if err := sub.Submit(&reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	r.qp.mu.Lock()
	posts0 := r.qp.posts
	r.qp.mu.Unlock()
	if h := r.qp.heldCount(); h != 0 {
		t.Fatalf("%d commands reached the controller before Flush", h)
	}
	sub.Flush()
	if h := r.qp.heldCount(); h != 8 {
		t.Fatalf("%d commands at the controller when Flush returned, want all 8 (issued inline)", h)
	}
	r.qp.mu.Lock()
	posts := r.qp.posts - posts0
	r.qp.mu.Unlock()
	if posts != 1 {
		t.Fatalf("the burst of 8 took %d PostSend calls, want 1", posts)
	}
	r.qp.setAuto(true)
	r.qp.release() // the queue's goroutine, woken by Flush, reaps them
	for range reqs {
		if got := <-n.ch; got.Err != nil {
			t.Fatal(got.Err)
		}
	}
	if st := r.c.QueueStats()[0]; st.Completed != 8 {
		t.Fatalf("queue stats %+v, want 8 completed", st)
	}
}

// TestSubmitterCompletesInsideFlush: with a controller that answers at
// once, Flush issues the burst and finishes it: every request has
// completed, with its data, when Flush returns.
func TestSubmitterCompletesInsideFlush(t *testing.T) {
	const bs, blocks = 512, 1024
	r := newFakeRig(t, 16, bs, blocks, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i*5 + 3)
	}
	s := newFakeSession(r, bs, blocks)
	sub, _ := s.Submitter(0)
	n := &countNotifier{}
	reqs := make([]Request, 6)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i) * 4096, Data: make([]byte, 4096), Notify: n}
		if err := sub.Submit(&reqs[i]); err != nil {
			t.Fatal(err)
		}
	}
	sub.Flush()
	if c := n.count(); c != len(reqs) {
		t.Fatalf("%d of %d requests completed inside Flush", c, len(reqs))
	}
	for i := range reqs {
		if want := r.qp.disk[i*4096 : (i+1)*4096]; !bytes.Equal(reqs[i].Data, want) || reqs[i].Err != nil {
			t.Fatalf("request %d: err %v, data differs: %v", i, reqs[i].Err, !bytes.Equal(reqs[i].Data, want))
		}
	}
}

// TestSubmittersShareQueueRace: four goroutines, each with its own
// Submitter on the same queue, and blocking callers through the queue's
// goroutine, write and read back their own blocks in bursts: Flushes that
// find the queue busy hand over to its goroutine; every byte comes back
// (-race checks the hand-over of the queue's state).
func TestSubmittersShareQueueRace(t *testing.T) {
	const bs, blocks, per = 512, 4096, 16 // blocks per goroutine burst slot
	r := newFakeRigN(t, 1, 8, bs, blocks, 4096, 0)
	s := newFakeSession(r, bs, blocks)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, _ := s.Submitter(0)
			done := make(chan *Request, 4)
			reqs := make([]Request, 4)
			for round := range 20 {
				for i := range reqs {
					off := int64((g*4+i)*per*bs) + int64(round%4)*bs
					data := bytes.Repeat([]byte{byte(g*16 + i + round)}, bs)
					reqs[i] = Request{Op: IOWrite, Off: off, Data: data, Done: done}
					_ = sub.Submit(&reqs[i])
				}
				sub.Flush()
				for range reqs {
					if x := <-done; x.Err != nil {
						errs <- x.Err
						return
					}
				}
				for i := range reqs {
					reqs[i].Op, reqs[i].Data = IORead, make([]byte, bs)
					_ = sub.Submit(&reqs[i])
				}
				sub.Flush()
				for range reqs {
					x := <-done
					i := int(x.Off/int64(per*bs)) - g*4
					if want := byte(g*16 + i + round); x.Err != nil || x.Data[0] != want || x.Data[bs-1] != want {
						errs <- fmt.Errorf("goroutine %d round %d request %d: err %v, data %#x, want %#x", g, round, i, x.Err, x.Data[0], want)
						return
					}
				}
			}
		}()
	}
	for range 2 { // blocking callers through the queue's goroutine at the same time
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := make([]byte, bs)
			for k := range 50 {
				if _, err := r.ns.ReadAt(p, int64(blocks-1-k)*bs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestSubmitterAllocatesNothing: Submit + Flush of a 4 KiB read allocate
// nothing in steady state.
func TestSubmitterAllocatesNothing(t *testing.T) {
	const bs, blocks = 512, 1024
	r := newFakeRig(t, 8, bs, blocks, 4096, 0)
	s := newFakeSession(r, bs, blocks)
	sub, _ := s.Submitter(0)
	waitMuxIdle(t, r.c.muxes[0])
	n := &countNotifier{ch: make(chan *Request, 1)}
	req := &Request{Op: IORead, Data: make([]byte, 4096), Notify: n}
	run := func() {
		_ = sub.Submit(req)
		sub.Flush()
		<-n.ch
	}
	for range 100 {
		run()
	}
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	if a := testing.AllocsPerRun(200, run); a != 0 {
		t.Fatalf("%.1f allocations per Submit + Flush", a)
	}
}
