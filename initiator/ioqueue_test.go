package initiator

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// roundTrip submits io, waits and polls it back.
func roundTrip(t *testing.T, q *IOQueue, io *IO) {
	t.Helper()
	if err := q.Submit(io); err != nil {
		t.Fatalf("submit %v: %v", io.Op, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	var done [4]*IO
	if n := q.Poll(done[:]); n != 1 || done[0] != io {
		t.Fatalf("poll returned %d %v", n, done[:n])
	}
}

func TestIOQueueWriteReadKeyedAndInCapsule(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inCapsule int
		wantInCap bool
	}{
		{"keyed", 0, false},
		{"in-capsule", 8192, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newFakeRig(t, 8, 512, 256, 16<<10, tc.inCapsule)
			r.qp.record = true
			q := r.ioq
			wb, ok := q.AllocBuffer()
			if !ok || len(wb.Bytes()) != 16<<10 {
				t.Fatalf("AllocBuffer: %v %d", ok, len(wb.Bytes()))
			}
			for i := range wb.Bytes() {
				wb.Bytes()[i] = byte(i*7 + 3)
			}
			w := &IO{Op: IOWrite, NSID: fakeNSID, LBA: 10, Blocks: 8, Buf: wb, User: 42}
			roundTrip(t, q, w)
			if err := w.Result(); err != nil || w.User != 42 {
				t.Fatalf("write: %v user %d", err, w.User)
			}
			sgl := r.qp.commands[len(r.qp.commands)-1].sqe.SGL1()
			if sgl.IsInCapsule() != tc.wantInCap {
				t.Fatalf("in-capsule %v, want %v", sgl.IsInCapsule(), tc.wantInCap)
			}
			if !tc.wantInCap && (sgl.Subtype() != nvme.SGLSubtypeAddress || !sgl.IsKeyed()) {
				t.Fatalf("keyed SGL type %#x subtype %#x, want keyed subtype 0", sgl.Type(), sgl.Subtype())
			}
			if !bytes.Equal(r.qp.disk[10*512:18*512], wb.Bytes()[:8*512]) {
				t.Fatal("disk does not hold the written data")
			}
			rb, _ := q.AllocBuffer()
			rd := &IO{Op: IORead, NSID: fakeNSID, LBA: 10, Blocks: 8, Buf: rb}
			roundTrip(t, q, rd)
			if err := rd.Result(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rb.Bytes()[:8*512], wb.Bytes()[:8*512]) {
				t.Fatal("read back differs")
			}
			if rd.Latency <= 0 {
				t.Fatalf("latency %v", rd.Latency)
			}
		})
	}
}

func TestIOQueueNVMeErrorIsStatusNotErr(t *testing.T) {
	r := newFakeRig(t, 4, 512, 16, 8192, 0)
	q := r.ioq
	b, _ := q.AllocBuffer()
	io := &IO{Op: IORead, NSID: fakeNSID, LBA: 15, Blocks: 2, Buf: b}
	roundTrip(t, q, io)
	if io.Err != nil || io.Status.Code() != nvme.StatusLBAOutOfRange {
		t.Fatalf("err %v status %v", io.Err, io.Status)
	}
	if err := io.Result(); !errors.Is(err, nvme.StatusLBAOutOfRange) {
		t.Fatalf("Result %v", err)
	}
}

func TestIOQueueSubmitRejectsBadIO(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	q := r.ioq
	other := newFakeRig(t, 4, 512, 64, 4096, 0)
	foreign, _ := other.ioq.AllocBuffer()
	b, _ := q.AllocBuffer()
	freed, _ := q.AllocBuffer()
	q.FreeBuffer(freed)
	cases := map[string]*IO{
		"nil":            nil,
		"no op":          {NSID: fakeNSID, Blocks: 1, Buf: b},
		"bad op":         {Op: 99, NSID: fakeNSID, Blocks: 1, Buf: b},
		"no buffer":      {Op: IORead, NSID: fakeNSID, Blocks: 1},
		"foreign buffer": {Op: IORead, NSID: fakeNSID, Blocks: 1, Buf: foreign},
		"freed buffer":   {Op: IOWrite, NSID: fakeNSID, Blocks: 1, Buf: freed},
		"unknown nsid":   {Op: IORead, NSID: 7, Blocks: 1, Buf: b},
		"zero blocks":    {Op: IORead, NSID: fakeNSID, Blocks: 0, Buf: b},
		"too long":       {Op: IOWrite, NSID: fakeNSID, Blocks: 9, Buf: b},
		"zeroes 0":       {Op: IOWriteZeroes, NSID: fakeNSID},
		"zeroes huge":    {Op: IOWriteZeroes, NSID: fakeNSID, Blocks: MaxBlocksPerIO + 1},
		"dealloc 0":      {Op: IODeallocate, NSID: fakeNSID},
	}
	for name, io := range cases {
		if err := q.Submit(io); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if r.qp.sends != 0 {
		t.Fatalf("%d bad IOs reached the wire", r.qp.sends)
	}
}

func TestIOQueueFullUntilPolled(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	q := r.ioq
	ios := make([]IO, 5)
	for i := 0; i < 4; i++ {
		ios[i] = IO{Op: IOFlush, NSID: fakeNSID, User: uint64(i)}
		if err := q.Submit(&ios[i]); err != nil {
			t.Fatal(err)
		}
	}
	ios[4] = IO{Op: IOFlush, NSID: fakeNSID}
	if err := q.Submit(&ios[4]); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("5th submit: %v, want ErrQueueFull", err)
	}
	var done [8]*IO
	if n := q.Poll(done[:]); n != 0 {
		t.Fatalf("polled %d before any response", n)
	}
	r.qp.release()
	got := 0
	for got < 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := q.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		got += q.Poll(done[got:4])
	}
	seen := map[uint64]bool{}
	for _, io := range done[:4] {
		if io.Result() != nil || seen[io.User] {
			t.Fatalf("bad completion %+v", io)
		}
		seen[io.User] = true
	}
	if err := q.Submit(&ios[4]); err != nil {
		t.Fatalf("submit after poll: %v", err)
	}
}

func TestIOQueueBatchesPosts(t *testing.T) {
	r := newFakeRig(t, 64, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	q := r.ioq
	ios := make([]IO, 40)
	for i := range ios {
		ios[i] = IO{Op: IOFlush, NSID: fakeNSID}
		if err := q.Submit(&ios[i]); err != nil {
			t.Fatal(err)
		}
	}
	var done [64]*IO
	q.Poll(done[:]) // posts the tail of the batch
	if r.qp.sends != 40 {
		t.Fatalf("%d sends posted, want 40", r.qp.sends)
	}
	if r.qp.posts > 40/sendBatch+1 {
		t.Fatalf("%d PostSend calls for 40 submissions: not batched", r.qp.posts)
	}
}

func TestIOQueueWaitBlocksUntilCompletion(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	held := make(chan struct{}, 1)
	r.qp.mu.Lock()
	r.qp.heldCh = held
	r.qp.mu.Unlock()
	q := r.ioq
	io := &IO{Op: IOFlush, NSID: fakeNSID}
	if err := q.Submit(io); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waited <- q.Wait(ctx)
	}()
	// The command reaches the fake target only after Wait flushed it.
	select {
	case <-held:
	case err := <-waited:
		t.Fatalf("Wait returned %v before a response", err)
	case <-time.After(10 * time.Second):
		t.Fatal("command never posted")
	}
	r.qp.release()
	if err := <-waited; err != nil {
		t.Fatalf("Wait: %v", err)
	}
	var done [1]*IO
	if n := q.Poll(done[:]); n != 1 || done[0] != io {
		t.Fatalf("poll %d", n)
	}
}

func TestIOQueueWaitIdleAndContext(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	q := r.ioq
	if err := q.Wait(context.Background()); !errors.Is(err, ErrIdle) {
		t.Fatalf("idle Wait: %v", err)
	}
	r.qp.setAuto(false)
	if err := q.Submit(&IO{Op: IOFlush, NSID: fakeNSID}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := q.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with cancelled ctx: %v", err)
	}
}

func TestIOQueueControllerLostFailsOutstanding(t *testing.T) {
	r := newFakeRig(t, 8, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	q := r.ioq
	ios := make([]IO, 3)
	for i := range ios {
		ios[i] = IO{Op: IOFlush, NSID: fakeNSID}
		if err := q.Submit(&ios[i]); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- q.Wait(ctx) }()
	r.c.lose(errors.New("test: link down"))
	select {
	case <-r.c.Done():
	default:
		t.Fatal("Done not closed")
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait after loss: %v, want nil (failed IOs to reap)", err)
	}
	var done [8]*IO
	if n := q.Poll(done[:]); n != 3 {
		t.Fatalf("poll returned %d, want 3", n)
	}
	for _, io := range done[:3] {
		if !errors.Is(io.Err, ErrControllerLost) {
			t.Fatalf("IO err %v", io.Err)
		}
	}
	if err := q.Submit(&IO{Op: IOFlush, NSID: fakeNSID}); !errors.Is(err, ErrControllerLost) {
		t.Fatalf("submit after loss: %v", err)
	}
	if err := q.Wait(ctx); !errors.Is(err, ErrControllerLost) {
		t.Fatalf("Wait after loss with nothing outstanding: %v", err)
	}
	if err := r.c.Err(); !errors.Is(err, ErrControllerLost) {
		t.Fatalf("Err %v", err)
	}
	// Late responses from the dead connection are ignored.
	r.qp.release()
	if n := q.Poll(done[:]); n != 0 {
		t.Fatalf("late responses produced %d completions", n)
	}
}

func TestIOQueueProtocolErrorLosesController(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	q := r.ioq
	io := &IO{Op: IOFlush, NSID: fakeNSID}
	if err := q.Submit(io); err != nil {
		t.Fatal(err)
	}
	var done [2]*IO
	q.Poll(done[:]) // post it
	var cqe nvme.CQE
	cqe.SetCID(0xBEEF)
	r.qp.sendCQE(cqe)
	if n := q.Poll(done[:]); n != 1 || !errors.Is(done[0].Err, ErrControllerLost) {
		t.Fatalf("poll %d", n)
	}
	if err := r.c.Err(); !errors.Is(err, ErrProtocol) {
		t.Fatalf("controller error %v, want ErrProtocol cause", err)
	}
}

func TestCloseReleasesBlockedWaiter(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.qp.setAuto(false)
	q := r.ioq
	if err := q.Submit(&IO{Op: IOFlush, NSID: fakeNSID}); err != nil {
		t.Fatal(err)
	}
	var done [1]*IO
	q.Poll(done[:])
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waiting <- q.Wait(ctx)
	}()
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waiting; err != nil && !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait during Close: %v", err)
	}
	if err := q.Submit(&IO{Op: IOFlush, NSID: fakeNSID}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Submit after Close: %v", err)
	}
	if n := q.Poll(done[:]); n != 0 {
		t.Fatalf("Poll after Close: %d", n)
	}
	if _, ok := q.AllocBuffer(); ok {
		t.Fatal("AllocBuffer after Close")
	}
	if err := r.c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestIOQueueDeallocateAndWriteZeroes(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = 0xAA
	}
	q := r.ioq
	roundTrip(t, q, &IO{Op: IODeallocate, NSID: fakeNSID, LBA: 2, Blocks: 3})
	roundTrip(t, q, &IO{Op: IOWriteZeroes, NSID: fakeNSID, LBA: 10, Blocks: 1})
	for blk := 0; blk < 64; blk++ {
		want := byte(0xAA)
		if blk >= 2 && blk < 5 || blk == 10 {
			want = 0
		}
		if got := r.qp.disk[blk*512]; got != want || r.qp.disk[blk*512+511] != want {
			t.Fatalf("block %d = %#x, want %#x", blk, got, want)
		}
	}
}

func TestIOQueueSubmitPollDoesNotAllocate(t *testing.T) {
	r := newFakeRig(t, 16, 4096, 64, 4096, 0)
	q := r.ioq
	b, _ := q.AllocBuffer()
	io := &IO{Op: IORead, NSID: fakeNSID, LBA: 3, Blocks: 1, Buf: b}
	w := &IO{Op: IOWrite, NSID: fakeNSID, LBA: 4, Blocks: 1, Buf: b}
	var done [4]*IO
	ctx := context.Background()
	step := func() {
		for _, x := range []*IO{io, w} {
			if err := q.Submit(x); err != nil {
				t.Fatal(err)
			}
		}
		got := 0
		for got < 2 {
			if err := q.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			got += q.Poll(done[got:])
		}
	}
	step() // warm up the fake's slices
	if a := testing.AllocsPerRun(200, step); a != 0 {
		t.Fatalf("%.1f allocations per read+write round trip, want 0", a)
	}
}
