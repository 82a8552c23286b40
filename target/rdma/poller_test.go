package rdma

import (
	"bytes"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

func defaultFakeAttr() verbs.DeviceAttr {
	return verbs.DeviceAttr{
		MaxQPWR: 1024, MaxSGE: 16, MaxSGERd: 16, MaxCQE: 1 << 16,
		MaxQPRdAtom: 16, MaxQPInitRdAtom: 16, NumCompVectors: 1,
		Caps: verbs.CapSendWithInv,
	}
}

// ioParams negotiates an I/O queue of depth entries with host IRD ird.
func ioParams(t testing.TB, attr verbs.DeviceAttr, depth int, ird uint8) queueParams {
	t.Helper()
	cfg := Config{Provider: fakeProvider{}, core: newFakeCore(0)}
	if err := cfg.normalize(attr.MaxQPWR); err != nil {
		t.Fatal(err)
	}
	pd := make([]byte, nvme.CMRequestSize)
	r := nvme.CMRequest{QID: 1, HRQSize: uint16(depth), HSQSize: uint16(depth - 1)}
	r.Marshal(pd)
	p, st := negotiate(&cfg, attr, verbs.ConnParam{PrivateData: pd, InitiatorDepth: ird})
	if st != 0 {
		t.Fatalf("negotiate: reject %d", st)
	}
	return p
}

func TestHostReadPostsWriteThenSend(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	copy(g.core.disk[512*3:], bytes.Repeat([]byte{0xAB}, 4096))
	sqe := rwSQE(nvme.IORead, 77, 3, 8, 0xdead0000, 0x99, nvme.SGLSubtypeAddress)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	if len(g.qp.sends) != 2 || g.qp.sends[0].Opcode != verbs.OpRDMAWrite || g.qp.sends[1].Opcode != verbs.OpSend {
		t.Fatalf("posted %+v, want WRITE then SEND", g.qp.sends)
	}
	w := g.qp.sends[0]
	if w.RemoteAddr != 0xdead0000 || w.RKey != 0x99 || w.SGL[0].Length != 4096 || w.Flags&verbs.SendSignaled != 0 {
		t.Fatalf("WRITE %+v", w)
	}
	if !bytes.Equal(g.memAt(g.qp.sges[0]), bytes.Repeat([]byte{0xAB}, 4096)) {
		t.Fatal("WRITE source does not hold the disk data")
	}
	if g.qp.sends[1].Flags&verbs.SendSignaled == 0 {
		t.Fatal("CQE SEND not signaled")
	}
	c := g.cqeOf(g.qp.sends[1])
	if c.CID() != 77 || !c.Status().OK() {
		t.Fatalf("CQE cid %d status %v", c.CID(), c.Status())
	}
	r := &g.q.slots[splitIdx(g.qp.sends[1].ID)]
	if r.state != StateCompleting {
		t.Fatalf("state %v, want Completing", r.state)
	}
	// The receive buffer was reposted before the SEND.
	if len(g.qp.order) < 1 || g.qp.order[0] != wrID(wrRecv, 0) {
		t.Fatalf("post order %x: receive 0 not reposted first", g.qp.order)
	}
	g.complete(g.qp.sends[1])
	g.step()
	if r.state != StateFree || g.q.active != 0 || g.q.sendCredits != g.q.params.sendQ || freeData(g.q) != allData(g.q) {
		t.Fatalf("after SEND completion: state %v active %d credits %d/%d bufs %d",
			r.state, g.q.active, g.q.sendCredits, g.q.params.sendQ, freeData(g.q))
	}
}

func splitIdx(id uint64) int32 { _, i := splitWRID(id); return i }

func TestHostWriteReadsThenExecutes(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	sqe := rwSQE(nvme.IOWrite, 5, 10, 8, 0x1000, 0x42, nvme.SGLSubtypeInvalidate)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	reads := g.sendsOf(verbs.OpRDMARead)
	if len(reads) != 1 || len(g.qp.sends) != 1 {
		t.Fatalf("posted %+v, want one READ", g.qp.sends)
	}
	rd := reads[0]
	if rd.RemoteAddr != 0x1000 || rd.RKey != 0x42 || rd.SGL[0].Length != 4096 || rd.Flags&verbs.SendSignaled == 0 {
		t.Fatalf("READ %+v", rd)
	}
	r := &g.q.slots[splitIdx(rd.ID)]
	if r.state != StateReadingFromHost || g.fq.executed.Load() != 0 {
		t.Fatalf("state %v executed %d before the READ completed", r.state, g.fq.executed.Load())
	}
	// The device writes the host data into the buffer, then completes.
	copy(g.memAt(g.qp.sges[0]), bytes.Repeat([]byte{0x5A}, 4096))
	g.complete(rd)
	g.step()
	if !bytes.Equal(g.core.disk[5120:5120+4096], bytes.Repeat([]byte{0x5A}, 4096)) {
		t.Fatal("disk does not hold the data read from the host")
	}
	sends := g.sendsOf(verbs.OpSendWithInv)
	if len(sends) != 1 || sends[0].InvalidateRKey != 0x42 {
		t.Fatalf("posted %+v, want SEND_WITH_INV of key 0x42", g.qp.sends)
	}
	// The data buffer went back to the pool right after execution.
	if freeData(g.q) != allData(g.q) {
		t.Fatalf("free buffers %d, want %d", freeData(g.q), allData(g.q))
	}
}

func TestSendWithInvFallsBackWithoutCap(t *testing.T) {
	attr := defaultFakeAttr()
	attr.Caps = 0
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	sqe := rwSQE(nvme.IORead, 5, 0, 1, 0x1000, 0x42, nvme.SGLSubtypeInvalidate)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	if len(g.sendsOf(verbs.OpSendWithInv)) != 0 || len(g.sendsOf(verbs.OpSend)) != 1 {
		t.Fatalf("posted %+v, want a plain SEND", g.qp.sends)
	}
}

func TestSendWithInvalidateKnob(t *testing.T) {
	for _, on := range []bool{false, true} {
		attr := defaultFakeAttr()
		g := newFakeRig(t, attr, Config{SendWithInvalidate: &on}, ioParams(t, attr, 8, 4))
		sqe := rwSQE(nvme.IORead, 5, 0, 1, 0x1000, 0x42, nvme.SGLSubtypeInvalidate)
		g.qp.reset()
		g.deliver(0, capsule(&sqe, nil))
		g.step()
		want := verbs.OpSend
		if on {
			want = verbs.OpSendWithInv
		}
		if s := g.sendsOf(want); len(s) != 1 {
			t.Fatalf("SendWithInvalidate=%v: posted %+v, want one %v", on, g.qp.sends, want)
		}
	}
}

func TestORDBoundsReadsInFlight(t *testing.T) {
	attr := defaultFakeAttr()
	p := ioParams(t, attr, 16, 1)
	if p.ord != 1 {
		t.Fatalf("ord %d, want 1", p.ord)
	}
	g := newFakeRig(t, attr, Config{}, p)
	peak := 0
	g.l.hooks = &testHooks{readPosted: func(n int) { peak = max(peak, n) }}
	g.qp.reset()
	for i := range 8 {
		sqe := rwSQE(nvme.IOWrite, uint16(i), uint64(i*8), 8, 0x1000*uint64(i+1), 7, 0)
		g.deliver(int32(i), capsule(&sqe, nil))
	}
	g.step()
	done := 0
	for round := 0; done < 8 && round < 100; round++ {
		reads := g.sendsOf(verbs.OpRDMARead)
		if len(reads) != 1 {
			t.Fatalf("round %d: %d READs posted at once, ORD is 1", round, len(reads))
		}
		g.qp.reset()
		g.complete(reads[0])
		g.step()
		sends := g.sendsOf(verbs.OpSend)
		for _, s := range sends {
			g.complete(s)
			done++
		}
		// Keep only the READ posted in this step for the next round.
		kept := g.sendsOf(verbs.OpRDMARead)
		g.qp.reset()
		g.qp.sends = append(g.qp.sends, kept...)
		if done == 8 {
			break
		}
	}
	if done != 8 || peak != 1 {
		t.Fatalf("completed %d writes, peak READs %d", done, peak)
	}
}

func TestSendCreditsThrottleCompletions(t *testing.T) {
	attr := defaultFakeAttr()
	attr.MaxQPWR = 4 // depth 4, send queue min(8, 4) = 4: two reads at a time
	p := ioParams(t, attr, 4, 4)
	if p.sendQ != 4 {
		t.Fatalf("sendQ %d", p.sendQ)
	}
	g := newFakeRig(t, attr, Config{}, p)
	g.qp.reset()
	for i := range 4 {
		sqe := rwSQE(nvme.IORead, uint16(i), uint64(i), 1, 0x1000, 7, 0)
		g.deliver(int32(i), capsule(&sqe, nil))
	}
	g.step()
	if len(g.qp.sends) != 4 {
		t.Fatalf("%d WRs posted with 4 send credits", len(g.qp.sends))
	}
	for i := 0; i < len(g.qp.sends); i += 2 {
		if g.qp.sends[i].Opcode != verbs.OpRDMAWrite || g.qp.sends[i+1].Opcode != verbs.OpSend ||
			splitIdx(g.qp.sends[i].ID) != splitIdx(g.qp.sends[i+1].ID) {
			t.Fatalf("WRITE not chained before its SEND: %+v", g.qp.sends)
		}
	}
	waiting := 0
	for i := range g.q.slots {
		if g.q.slots[i].state == StateWriteToHostPending {
			waiting++
		}
	}
	if waiting != 2 {
		t.Fatalf("%d requests in WriteToHostPending, want 2", waiting)
	}
	first := g.sendsOf(verbs.OpSend)[0]
	g.qp.reset()
	g.complete(first)
	g.step()
	if len(g.qp.sends) != 2 {
		t.Fatalf("after one SEND completion %d WRs posted, want WRITE+SEND", len(g.qp.sends))
	}
}

func TestBacklogWhenAllSlotsBusy(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 2, 4)) // 4 slots, 2 receives
	var sends []verbs.SendWR
	cid := uint16(0)
	// Two rounds of two commands each: their SENDs stay uncompleted, so
	// all four slots end up Completing.
	for range 2 {
		g.qp.reset()
		for ri := range int32(2) {
			sqe := rwSQE(nvme.IOFlush, cid, 0, 1, 0, 0, 0)
			sqe.SetOpcode(nvme.IOFlush)
			sqe.SGL1().SetNull()
			g.deliver(ri, capsule(&sqe, nil))
			cid++
		}
		g.step()
		sends = append(sends, g.sendsOf(verbs.OpSend)...)
	}
	if len(sends) != 4 || len(g.q.freeSlots) != 0 {
		t.Fatalf("%d SENDs, %d free slots", len(sends), len(g.q.freeSlots))
	}
	g.qp.reset()
	sqe := rwSQE(nvme.IOFlush, 100, 0, 1, 0, 0, 0)
	sqe.SetOpcode(nvme.IOFlush)
	sqe.SGL1().SetNull()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	if g.q.backlogLen != 1 || len(g.qp.sends) != 0 {
		t.Fatalf("backlog %d, sends %d: command without a slot not parked", g.q.backlogLen, len(g.qp.sends))
	}
	g.complete(sends[0])
	g.step()
	got := g.sendsOf(verbs.OpSend)
	if g.q.backlogLen != 0 || len(got) != 1 {
		t.Fatalf("parked command not run after a slot freed: backlog %d sends %d", g.q.backlogLen, len(got))
	}
	if c := g.cqeOf(got[0]); c.CID() != 100 {
		t.Fatalf("parked command not run after a slot freed: backlog %d sends %d", g.q.backlogLen, len(got))
	}
}

func TestTruncatedCapsule(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	sqe := rwSQE(nvme.IORead, 0x4242, 0, 1, 0x1000, 7, 0)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil)[:40])
	g.step()
	c := g.onlyCQE()
	if c.CID() != 0x4242 || c.Status() != nvme.StatusInvalidField.WithDNR() {
		t.Fatalf("CQE cid %#x status %v", c.CID(), c.Status())
	}
	if g.q.dying || g.fq.executed.Load() != 0 {
		t.Fatal("truncated capsule killed the queue or reached the core")
	}
	g.complete(g.sendsOf(verbs.OpSend)[0])
	g.step()
	// Three bytes: no CID, the queue is dead.
	g.qp.reset()
	g.deliver(1, []byte{1, 2, 3})
	g.step()
	if !g.q.dying || len(g.qp.sends) != 0 {
		t.Fatalf("3-byte capsule: dying %v, sends %d", g.q.dying, len(g.qp.sends))
	}
}

func TestReadErrorKillsQueueAndFreesBufferOnlyAfterCompletion(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	sqe := rwSQE(nvme.IOWrite, 1, 0, 8, 0x1000, 7, 0)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, nil))
	g.step()
	rd := g.sendsOf(verbs.OpRDMARead)[0]
	r := &g.q.slots[splitIdx(rd.ID)]
	if freeData(g.q) != allData(g.q)-1 {
		t.Fatal("buffer not taken")
	}
	g.scq.inject(verbs.WorkCompletion{ID: rd.ID, Status: verbs.WCRemAccessErr})
	g.step()
	if !g.q.dying || r.state != StateFree || freeData(g.q) != allData(g.q) || g.fq.executed.Load() != 0 {
		t.Fatalf("dying %v state %v bufs %d executed %d", g.q.dying, r.state, len(g.q.freeBufs), g.fq.executed.Load())
	}
	if g.q.st.queueErrors.Load() != 1 {
		t.Fatal("queue error not counted")
	}
}

func TestConnectQIDMustMatchCM(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4)) // CM qid 1
	var sqe nvme.SQE
	sqe.SetConnect(2, 7, 0, 0)
	sqe.SetCID(9)
	sqe.SetPSDT(nvme.PSDTSGL)
	data := make([]byte, nvme.ConnectDataSize)
	sqe.SGL1().SetDataBlock(0, nvme.ConnectDataSize, nvme.SGLSubtypeOffset)
	g.qp.reset()
	g.deliver(0, capsule(&sqe, data))
	g.step()
	c := g.onlyCQE()
	if c.Status().Code() != nvme.StatusConnectInvalidParam || c.DW0() != 42 {
		t.Fatalf("status %v dw0 %d", c.Status(), c.DW0())
	}
}

func TestInCapsuleWriteHoldsReceiveUntilCQE(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	release := make(chan struct{})
	g.core.hold.Store(&release)
	var sqe nvme.SQE
	sqe.SetRW(nvme.IOWrite, 1, 2, 2, 0)
	sqe.SetCID(3)
	sqe.SetPSDT(nvme.PSDTSGL)
	sqe.SGL1().SetDataBlock(0, 1024, nvme.SGLSubtypeOffset)
	payload := bytes.Repeat([]byte{0xC3}, 1024)
	g.qp.reset()
	g.deliver(4, capsule(&sqe, payload))
	g.step()
	if len(g.qp.recvs) != 0 {
		t.Fatal("receive buffer with in-capsule data reposted before execution finished")
	}
	close(release)
	// Wait for the asynchronous completion to arrive and be handled.
	for i := 0; len(g.sendsOf(verbs.OpSend)) == 0; i++ {
		if i > 1e6 {
			t.Fatal("no completion")
		}
		t0 := <-g.q.compCh
		g.q.onComplete(t0)
		g.q.flush()
	}
	if len(g.qp.order) != 2 || g.qp.order[0] != wrID(wrRecv, 4) {
		t.Fatalf("post order %x: receive 4 must be reposted right before the SEND", g.qp.order)
	}
	if !bytes.Equal(g.core.disk[1024:2048], payload) {
		t.Fatal("in-capsule data not written")
	}
	if g.q.st.inCapsuleBytes.Load() != 1024 {
		t.Fatal("in-capsule bytes not counted")
	}
}

func TestStateStrings(t *testing.T) {
	seen := map[string]bool{}
	for s := StateFree; s <= StateCompleting; s++ {
		n := s.String()
		if n == "" || seen[n] {
			t.Fatalf("state %d: name %q empty or duplicate", s, n)
		}
		seen[n] = true
	}
	if State(200).String() != "State(200)" {
		t.Fatal(State(200).String())
	}
}

// TestIdleArmsSendCQOnlyWhenWaited: a queue going idle always arms its
// receive CQ, and its send CQ only while progress depends on a send
// completion. After a host read (WRITE + response SEND posted) nothing
// waits for the SEND's completion, so it must not wake the poller; an
// RDMA READ in flight (host write) or a drain must.
func TestIdleArmsSendCQOnlyWhenWaited(t *testing.T) {
	attr := defaultFakeAttr()
	g := newFakeRig(t, attr, Config{}, ioParams(t, attr, 8, 4))
	arm := func() (r, s int) {
		t.Helper()
		r0, s0 := g.rcq.armed, g.scq.armed
		if err := g.q.arm(); err != nil {
			t.Fatal(err)
		}
		return g.rcq.armed - r0, g.scq.armed - s0
	}
	if r, s := arm(); r != 1 || s != 0 {
		t.Fatalf("idle queue armed receive CQ %d, send CQ %d times; want 1, 0", r, s)
	}
	rd := rwSQE(nvme.IORead, 1, 0, 8, 0x1000, 0x42, nvme.SGLSubtypeAddress)
	g.qp.reset()
	g.deliver(0, capsule(&rd, nil))
	g.step()
	if len(g.sendsOf(verbs.OpSend)) != 1 {
		t.Fatalf("posted %+v, want the response SEND", g.qp.sends)
	}
	if r, s := arm(); r != 1 || s != 0 {
		t.Fatalf("with only a response SEND outstanding: armed receive CQ %d, send CQ %d times; want 1, 0", r, s)
	}
	wr := rwSQE(nvme.IOWrite, 2, 8, 8, 0x2000, 0x43, nvme.SGLSubtypeAddress)
	g.qp.reset()
	g.deliver(1, capsule(&wr, nil))
	g.step()
	reads := g.sendsOf(verbs.OpRDMARead)
	if len(reads) != 1 {
		t.Fatalf("posted %+v, want one READ", g.qp.sends)
	}
	if r, s := arm(); r != 1 || s != 1 {
		t.Fatalf("with an RDMA READ in flight: armed receive CQ %d, send CQ %d times; want 1, 1", r, s)
	}
	// The READ completes: the write runs and its SEND is posted; the
	// first SEND's completion, never waited for, is reaped in this pass.
	g.complete(reads[0])
	g.step()
	if g.q.active != 2 {
		t.Fatalf("%d active slots, want 2 (both responses in flight)", g.q.active)
	}
	if r, s := arm(); r != 1 || s != 0 {
		t.Fatalf("after the READ completed: armed receive CQ %d, send CQ %d times; want 1, 0", r, s)
	}
	g.q.startDrain()
	if r, s := arm(); r != 1 || s != 1 {
		t.Fatalf("draining: armed receive CQ %d, send CQ %d times; want 1, 1", r, s)
	}
}
