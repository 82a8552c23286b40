package initiator

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/nvme"
)

// registerOn registers buf on the rig's controller as a session would
// (RegisterBuffer's per-controller step).
func registerOn(t testing.TB, c *Controller, buf []byte) *MemRegion {
	t.Helper()
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	m := &MemRegion{buf: buf, base: base, end: base + uintptr(len(buf))}
	if err := c.extAdd(m); err != nil {
		t.Fatal(err)
	}
	return m
}

func submitWait(t testing.TB, ns *Namespace, r *Request) {
	t.Helper()
	r.Done = make(chan *Request, 1)
	if err := ns.Submit(r); err != nil {
		t.Fatal(err)
	}
	if got := <-r.Done; got.Err != nil || got.N != len(got.Data) {
		t.Fatalf("%s at %d: N %d err %v", got.Op, got.Off, got.N, got.Err)
	}
}

// TestZeroCopyUsesCallerMemory: reads and writes whose Data lies in a
// registered region are moved by RDMA straight from and into it (the
// fake target resolves the keyed SGL against the region's MR, so a
// command naming a pool buffer would not touch the caller's bytes): the
// data is right and nothing is copied. The same requests on unregistered
// memory go through the copy path and are counted. With and without
// in-capsule write data (the capsule's second SGE uses the region's lkey).
func TestZeroCopyUsesCallerMemory(t *testing.T) {
	for _, inCapsule := range []int{0, 4096} {
		r := newFakeRigN(t, 2, 8, 512, 1024, 4096, inCapsule)
		reg := make([]byte, 64<<10)
		registerOn(t, r.c, reg)
		for i := range 16 << 10 {
			reg[i] = byte(i*13 + 5)
		}
		// 16 KiB write: four commands over both queues, from the region.
		submitWait(t, r.ns, &Request{Op: IOWrite, Off: 8192, Data: reg[:16<<10]})
		if !bytes.Equal(r.qp.disk[8192:8192+16<<10], reg[:16<<10]) {
			t.Fatalf("in-capsule %d: disk does not hold the written region", inCapsule)
		}
		submitWait(t, r.ns, &Request{Op: IORead, Off: 8192, Data: reg[32<<10 : 48<<10]})
		if !bytes.Equal(reg[32<<10:48<<10], reg[:16<<10]) {
			t.Fatalf("in-capsule %d: read into the region returned other data", inCapsule)
		}
		cp, zc := r.c.copyStats()
		if cp != 0 || zc != 32<<10 {
			t.Fatalf("in-capsule %d: copied %d, zero-copy %d; want 0 and %d", inCapsule, cp, zc, 32<<10)
		}
		// Unregistered memory, and a slice that runs past the region's
		// end, both take the copy path and still work.
		heap := bytes.Repeat([]byte{0x5A}, 4096)
		submitWait(t, r.ns, &Request{Op: IOWrite, Off: 0, Data: heap})
		out := make([]byte, 4096)
		submitWait(t, r.ns, &Request{Op: IORead, Off: 0, Data: out})
		if !bytes.Equal(out, heap) {
			t.Fatal("unregistered read returned other data")
		}
		big := make([]byte, 128<<10)
		reg2 := big[:64<<10]
		registerOn(t, r.c, reg2)
		straddle := big[60<<10 : 68<<10] // one 4 KiB command inside, one outside
		submitWait(t, r.ns, &Request{Op: IORead, Off: 8192, Data: straddle})
		if !bytes.Equal(straddle, r.qp.disk[8192:8192+8<<10]) {
			t.Fatal("straddling read returned other data")
		}
		cp, zc = r.c.copyStats()
		if cp != 4096+4096+4096 || zc != 32<<10+4096 {
			t.Fatalf("in-capsule %d: after copy-path requests copied %d zero-copy %d; want %d and %d",
				inCapsule, cp, zc, 3*4096, 32<<10+4096)
		}
	}
}

// TestZeroCopyDeregisteredFallsBack: after a region is removed from the
// controller its memory is served by the copy path, and teardown
// deregisters what is left.
func TestZeroCopyDeregisteredFallsBack(t *testing.T) {
	r := newFakeRig(t, 4, 512, 256, 4096, 0)
	reg := make([]byte, 8192)
	m := registerOn(t, r.c, reg)
	submitWait(t, r.ns, &Request{Op: IORead, Off: 0, Data: reg[:4096]})
	if err := r.c.extRemove(m); err != nil {
		t.Fatal(err)
	}
	copy(reg[4096:], bytes.Repeat([]byte{7}, 4096))
	submitWait(t, r.ns, &Request{Op: IOWrite, Off: 4096, Data: reg[4096:]})
	if !bytes.Equal(r.qp.disk[4096:8192], reg[4096:]) {
		t.Fatal("write after deregistration lost")
	}
	cp, zc := r.c.copyStats()
	if cp != 4096 || zc != 4096 {
		t.Fatalf("copied %d zero-copy %d, want 4096 and 4096", cp, zc)
	}
	registerOn(t, r.c, reg)
	fm := r.c.pd.(*fakeMem)
	if err := r.c.Close(); err != nil {
		t.Fatal(err)
	}
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for _, mr := range fm.regions {
		if !mr.closed {
			t.Fatalf("MR of %d bytes still registered after Close", len(mr.buf))
		}
	}
}

// TestZeroCopySubmitAllocatesNothing: a zero-copy read allocates nothing
// per I/O in steady state.
func TestZeroCopySubmitAllocatesNothing(t *testing.T) {
	r := newFakeRig(t, 8, 512, 1024, 4096, 0)
	reg := make([]byte, 4096)
	registerOn(t, r.c, reg)
	done := make(chan *Request, 1)
	req := &Request{Op: IORead, Data: reg, Done: done}
	var mu sync.Mutex
	run := func() {
		mu.Lock()
		defer mu.Unlock()
		if err := r.ns.Submit(req); err != nil {
			t.Fatal(err)
		}
		if got := <-done; got.Err != nil {
			t.Fatal(got.Err)
		}
	}
	for range 100 {
		run()
	}
	if cp, _ := r.c.copyStats(); cp != 0 {
		t.Fatalf("copied %d bytes", cp)
	}
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Fatalf("%.1f allocations per zero-copy Submit", n)
	}
}

// BenchmarkNamespaceSubmit4KZeroCopy is BenchmarkNamespaceSubmit4K with
// the read buffers in a registered region (no copy). 0 allocs expected.
func BenchmarkNamespaceSubmit4KZeroCopy(b *testing.B) {
	r := newFakeRigN(b, 2, 32, 512, 8192, 4096, 0)
	const window = 32
	reg := make([]byte, window*4096)
	registerOn(b, r.c, reg)
	done := make(chan *Request, window)
	reqs := make([]Request, window)
	for i := range reqs {
		reqs[i] = Request{Op: IORead, Off: int64(i) * 4096, Data: reg[i*4096 : (i+1)*4096], Done: done}
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
	if cp, _ := r.c.copyStats(); cp != 0 {
		b.Fatalf("copied %d bytes", cp)
	}
}

// TestZeroCopyFailedReadIsAnError: the zero-copy counterpart of
// TestFailedCommandNeverWritesCallerMemory. The first command of a
// two-command read into a registered region moves its data straight into
// the caller's memory but completes with an error status: the request
// fails (N 0, the status as Err) — the caller never sees success with
// that data — and the second command's data is there.
func TestZeroCopyFailedReadIsAnError(t *testing.T) {
	r := newFakeRig(t, 4, 512, 1024, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i*7 + 1)
	}
	reg := bytes.Repeat([]byte{0xEE}, 8192)
	registerOn(t, r.c, reg)
	held := make(chan struct{}, 1)
	r.qp.heldCh = held
	r.qp.setAuto(false)
	done := make(chan *Request, 1)
	req := &Request{Op: IORead, Off: 0, Data: reg, Done: done}
	if err := r.ns.Submit(req); err != nil {
		t.Fatal(err)
	}
	waitHeld(t, r.qp, held, 2)
	r.qp.mu.Lock()
	cmds := r.qp.held
	r.qp.held = nil
	r.qp.mu.Unlock()
	for _, cmd := range cmds {
		st := r.qp.execute(cmd)
		if (nvme.RWCmd{SQE: &cmd.sqe}).SLBA() == 0 {
			st = nvme.StatusDataTransferError
		}
		r.qp.respond(cmd, st)
	}
	got := <-done
	if !errors.Is(got.Err, nvme.StatusDataTransferError) || got.N != 0 {
		t.Fatalf("result %d %v, want 0 and a Data Transfer Error", got.N, got.Err)
	}
	if !bytes.Equal(reg[4096:], r.qp.disk[4096:8192]) {
		t.Fatal("the successful command's data is missing")
	}
	// Zero copy: the failed attempt's bytes did land (the documented
	// "undefined" of a failed zero-copy read).
	if !bytes.Equal(reg[:4096], r.qp.disk[:4096]) {
		t.Fatal("the failed command's transfer did not reach the region")
	}
	if cp, _ := r.c.copyStats(); cp != 0 {
		t.Fatalf("copied %d bytes", cp)
	}
}
