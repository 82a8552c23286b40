package initiator

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// waitHeld blocks until the fake QP holds n commands.
func waitHeld(t *testing.T, q *fakeQP, held chan struct{}, n int) {
	t.Helper()
	tm := time.NewTimer(30 * time.Second)
	defer tm.Stop()
	for q.heldCount() < n {
		select {
		case <-held:
		case <-tm.C:
			t.Fatalf("%d commands held, want %d", q.heldCount(), n)
		}
	}
}

// TestMuxCallersShareOneQueue: 32 blocking callers on a controller with ONE
// queue of depth 4: the queue carries exactly 4 commands at a time (its
// whole slot table), the other callers wait in the submission layer, and
// all complete once the controller answers.
func TestMuxCallersShareOneQueue(t *testing.T) {
	r := newFakeRig(t, 4, 512, 1024, 4096, 0)
	held := make(chan struct{}, 1)
	r.qp.heldCh = held
	r.qp.setAuto(false)
	const callers = 32
	errs := make(chan error, callers)
	for i := 0; i < callers; i++ {
		go func(i int) {
			_, err := r.ns.ReadAt(make([]byte, 512), int64(i)*512)
			errs <- err
		}(i)
	}
	waitHeld(t, r.qp, held, 4)
	if st := r.c.QueueStats()[0]; st.InFlight != 4 || st.Depth != 4 {
		t.Fatalf("queue stats %+v, want 4 of 4 in flight", st)
	}
	if n := r.qp.heldCount(); n != 4 {
		t.Fatalf("%d commands reached the controller, want the depth 4", n)
	}
	r.qp.setAuto(true)
	r.qp.release()
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestFailedCommandNeverWritesCallerMemory: a read of two commands whose
// first attempt moved its data into the registered buffer but completed
// with an error status: the caller's bytes for that command stay as they
// were, N counts nothing before it, and the second command's data (a
// fully successful attempt) is delivered.
func TestFailedCommandNeverWritesCallerMemory(t *testing.T) {
	r := newFakeRig(t, 4, 512, 1024, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i*7 + 1)
	}
	held := make(chan struct{}, 1)
	r.qp.heldCh = held
	r.qp.setAuto(false)
	done := make(chan *Request, 1)
	req := &Request{Op: IORead, Off: 0, Data: bytes.Repeat([]byte{0xEE}, 8192), Done: done}
	if err := r.ns.Submit(req); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, r.qp, held, 2)
	r.qp.mu.Lock()
	cmds := r.qp.held
	r.qp.held = nil
	r.qp.mu.Unlock()
	for _, cmd := range cmds {
		st := r.qp.execute(cmd) // the data reaches the host buffer either way
		if (nvme.RWCmd{SQE: &cmd.sqe}).SLBA() == 0 {
			st = nvme.StatusDataTransferError
		}
		r.qp.respond(cmd, st)
	}
	got := <-done
	if !errors.Is(got.Err, nvme.StatusDataTransferError) || got.N != 0 {
		t.Fatalf("result %d %v", got.N, got.Err)
	}
	if !bytes.Equal(got.Data[:4096], bytes.Repeat([]byte{0xEE}, 4096)) {
		t.Fatal("a failed command's data reached the caller")
	}
	if !bytes.Equal(got.Data[4096:], r.qp.disk[4096:8192]) {
		t.Fatal("the successful command's data is missing")
	}
}

// TestMuxSubmitAllocatesNothing: Namespace.Submit and the blocking ReadAt
// allocate nothing per I/O in steady state.
func TestMuxSubmitAllocatesNothing(t *testing.T) {
	r := newFakeRig(t, 8, 512, 1024, 4096, 0)
	done := make(chan *Request, 1)
	req := &Request{Op: IORead, Data: make([]byte, 4096), Done: done}
	buf := make([]byte, 4096)
	var mu sync.Mutex // keeps the closure honest under -race
	run := func() {
		mu.Lock()
		defer mu.Unlock()
		if err := r.ns.Submit(req); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.Err != nil {
			t.Fatal(got.Err)
		}
		if _, err := r.ns.ReadAt(buf, 4096); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 { // warm the pools
		run()
	}
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%.1f allocations per Submit + ReadAt", n)
	}
}

// BenchmarkNamespaceSubmit4K: 4 KiB reads through Namespace.Submit with 32
// in flight on 2 queues of the fake controller (the initiator alone: the
// fake answers inline). Allocations per read are reported (0 expected).
func BenchmarkNamespaceSubmit4K(b *testing.B) {
	r := newFakeRigN(b, 2, 32, 512, 8192, 4096, 0)
	const window = 32
	done := make(chan *Request, window)
	reqs := make([]Request, window)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i) * 4096, Data: make([]byte, 4096), Done: done}
	}
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		for inFlight < window && inFlight < b.N-i {
			_ = r.ns.Submit(&reqs[inFlight])
			inFlight++
		}
		got := <-done
		if got.Err != nil {
			b.Fatal(got.Err)
		}
		inFlight--
		if i+inFlight+1 < b.N {
			_ = r.ns.Submit(got)
			inFlight++
		}
	}
	for ; inFlight > 0; inFlight-- {
		<-done
	}
}

// BenchmarkNamespaceReadAt4K: blocking 4 KiB ReadAt from 8×GOMAXPROCS
// goroutines sharing 2 queues of the fake controller.
func BenchmarkNamespaceReadAt4K(b *testing.B) {
	r := newFakeRigN(b, 2, 32, 512, 8192, 4096, 0)
	b.ReportAllocs()
	b.SetBytes(4096)
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		p := make([]byte, 4096)
		off := int64(0)
		for pb.Next() {
			if _, err := r.ns.ReadAt(p, off); err != nil {
				b.Error(err)
				return
			}
			off = (off + 4096) % r.ns.Size()
		}
	})
}

// TestRequestQueuePlacement: Request.Queue q+1 puts every command of the
// request on I/O queue q (a request split in several commands too);
// 0 spreads them round robin.
func TestRequestQueuePlacement(t *testing.T) {
	r := newFakeRigN(t, 3, 8, 512, 1024, 4096, 0)
	done := make(chan *Request, 1)
	run := func(q uint16, n int) {
		t.Helper()
		req := &Request{Op: IORead, Data: make([]byte, n), Queue: q, Done: done}
		if err := r.ns.Submit(req); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.Err != nil {
			t.Fatal(got.Err)
		}
	}
	completed := func() []uint64 {
		var c []uint64
		for _, s := range r.c.QueueStats() {
			c = append(c, s.Completed)
		}
		return c
	}
	run(2, 4*4096) // queue 1, four commands
	run(5, 512)    // 5-1 = 4 mod 3: queue 1
	if c := completed(); c[0] != 0 || c[1] != 5 || c[2] != 0 {
		t.Fatalf("per-queue completions %v, want [0 5 0]", c)
	}
	for range 3 {
		run(0, 512)
	}
	if c := completed(); c[0] == 0 || c[2] == 0 {
		t.Fatalf("round robin left a queue unused: %v", c)
	}
}
