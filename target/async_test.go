package target

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// asyncBackend gives a mem backend an asynchronous path that completes
// on another goroutine (as the file backend's io_uring reaper does). It
// hides mem's NonBlocking so the core does not run it inline.
type asyncBackend struct {
	blockdev.Backend
	refuse    atomic.Bool  // Submit* return false
	fail      atomic.Bool  // IODone with ErrMedium
	submitted atomic.Int32 // taken by Submit*
	bufs      chan []byte  // buffers handed to Submit*
}

func (b *asyncBackend) SubmitRead(buf []byte, lba uint64, c blockdev.Completion) bool {
	if b.refuse.Load() {
		return false
	}
	b.submitted.Add(1)
	b.bufs <- buf
	go func() {
		err := b.ReadAt([][]byte{buf}, lba)
		if b.fail.Load() {
			err = blockdev.ErrMedium
		}
		c.IODone(err)
	}()
	return true
}

func (b *asyncBackend) SubmitWrite(buf []byte, lba uint64, f blockdev.WriteFlags, c blockdev.Completion) bool {
	if b.refuse.Load() {
		return false
	}
	b.submitted.Add(1)
	b.bufs <- buf
	go func() { c.IODone(b.WriteAt([][]byte{buf}, lba, f)) }()
	return true
}

// TestAsyncBackend: reads and writes go through blockdev.Async with the
// transport's own buffer, complete through QueueConn.Complete, map backend
// errors to NVMe status, and fall back to the worker pool when refused.
func TestAsyncBackend(t *testing.T) {
	be := &asyncBackend{Backend: mem.New(1024, 4096), bufs: make(chan []byte, 16)}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be})
	h := s.io
	data := bytes.Repeat([]byte{0xA5}, 8192)
	var w nvme.SQE
	w.SetRW(nvme.IOWrite, 1, 4, 2, 0)
	r := h.expect(w, data, nvme.StatusSuccess)
	if got := <-be.bufs; &got[0] != &r.Data[0] || len(got) != 8192 {
		t.Fatal("the backend did not get the request's own buffer")
	}
	back := make([]byte, 8192)
	var rd nvme.SQE
	rd.SetRW(nvme.IORead, 1, 4, 2, 0)
	h.expect(rd, back, nvme.StatusSuccess)
	<-be.bufs
	if !bytes.Equal(back, data) {
		t.Fatal("data read back differs")
	}
	if n := be.submitted.Load(); n != 2 {
		t.Fatalf("%d asynchronous submissions, want 2", n)
	}
	be.fail.Store(true)
	h.expect(rd, back, nvme.StatusUnrecoveredRead)
	<-be.bufs
	be.fail.Store(false)
	be.refuse.Store(true)
	clear(back)
	h.expect(rd, back, nvme.StatusSuccess)
	if !bytes.Equal(back, data) || be.submitted.Load() != 3 {
		t.Fatalf("worker fallback: data ok %v, submissions %d", bytes.Equal(back, data), be.submitted.Load())
	}
}

// batchingBackend counts plugs around an asyncBackend.
type batchingBackend struct {
	*asyncBackend
	plugs, unplugs atomic.Int32
}

func (b *batchingBackend) Plug()   { b.plugs.Add(1) }
func (b *batchingBackend) Unplug() { b.unplugs.Add(1) }

// TestAsyncBatch: within BeginBatch/EndBatch the core plugs a batching
// backend once and unplugs it at EndBatch; outside a batch it never plugs.
func TestAsyncBatch(t *testing.T) {
	be := &batchingBackend{asyncBackend: &asyncBackend{Backend: mem.New(1024, 4096), bufs: make(chan []byte, 16)}}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be})
	h := s.io
	h.q.BeginBatch()
	var reqs []*Request
	for i := range 3 {
		var rd nvme.SQE
		rd.SetRW(nvme.IORead, 1, uint64(i), 1, 0)
		r, done := h.submit(rd, make([]byte, 4096))
		if done {
			t.Fatal("completed inline")
		}
		reqs = append(reqs, r)
	}
	if p, u := be.plugs.Load(), be.unplugs.Load(); p != 1 || u != 0 {
		t.Fatalf("in batch: %d plugs, %d unplugs; want 1, 0", p, u)
	}
	h.q.EndBatch()
	if p, u := be.plugs.Load(), be.unplugs.Load(); p != 1 || u != 1 {
		t.Fatalf("after batch: %d plugs, %d unplugs; want 1, 1", p, u)
	}
	for range reqs {
		r := <-h.conn.completed
		if !r.Status().OK() {
			t.Fatal(r.Status())
		}
	}
	var rd nvme.SQE
	rd.SetRW(nvme.IORead, 1, 9, 1, 0)
	h.expect(rd, make([]byte, 4096), nvme.StatusSuccess)
	if p := be.plugs.Load(); p != 1 {
		t.Fatalf("plugged outside a batch: %d plugs", p)
	}
}

// pollingBackend is a batchingBackend that can be polled.
type pollingBackend struct {
	*batchingBackend
	polls atomic.Int32
}

func (b *pollingBackend) Poll() int { b.polls.Add(1); return 2 }

// TestQueuePoll: Queue.Poll polls the backends the last batch released,
// when they can be polled (blockdev.Poller), and sums what they finished;
// before any batch, and after a batch that touched no pollable backend,
// it polls nothing.
func TestQueuePoll(t *testing.T) {
	for _, pollable := range []bool{true, false} {
		bb := &batchingBackend{asyncBackend: &asyncBackend{Backend: mem.New(1024, 4096), bufs: make(chan []byte, 16)}}
		pb := &pollingBackend{batchingBackend: bb}
		var be blockdev.Backend = bb
		if pollable {
			be = pb
		}
		s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be})
		h := s.io
		if n := h.q.Poll(); n != 0 || pb.polls.Load() != 0 {
			t.Fatalf("pollable %v: Poll before any batch finished %d, polled %d times", pollable, n, pb.polls.Load())
		}
		h.q.BeginBatch()
		var rd nvme.SQE
		rd.SetRW(nvme.IORead, 1, 0, 1, 0)
		if _, done := h.submit(rd, make([]byte, 4096)); done {
			t.Fatal("completed inline")
		}
		h.q.EndBatch()
		want := 0
		if pollable {
			want = 2
		}
		if n := h.q.Poll(); n != want || int(pb.polls.Load()) != want/2 {
			t.Fatalf("pollable %v: Poll after the batch finished %d (want %d), polled %d times", pollable, n, want, pb.polls.Load())
		}
		<-h.conn.completed
	}
}
