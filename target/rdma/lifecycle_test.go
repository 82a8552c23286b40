package rdma

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// waitHeld waits until the fake core parked n more commands.
func (g *rig) waitHeld(n int) {
	g.t.Helper()
	for i := range n {
		select {
		case <-g.core.heldEv:
		case <-g.ctx.Done():
			g.t.Fatalf("core parked %d commands, want %d", i, n)
		}
	}
}

// Issue 10 item 8: a graceful drain finishes what is executing, sends no
// error CQE that is not path-related (a multipath Linux host fails the I/O
// on SCT 0 / SC 08h "Command Aborted due to SQ Deletion" instead of
// retrying it), leaves late capsules unanswered, and then disconnects so
// the host's error recovery retries them.
func TestCloseDrainsInFlight(t *testing.T) {
	ioDraining := make(chan struct{})
	dropped := make(chan struct{}, 4)
	g := newRig(t, rigOpts{hooks: &testHooks{
		draining: func(qid uint16) {
			if qid == 1 {
				close(ioDraining)
			}
		},
		dropped: func() { dropped <- struct{}{} },
	}})
	admin := g.connectQueue(rawOpts{qid: 0, depth: 32}, testSubNQN, testHostNQN)
	var aer nvme.SQE
	aer.SetOpcode(nvme.AdminAsyncEvent)
	aer.SetCID(77)
	aer.SetPSDT(nvme.PSDTSGL)
	aer.SGL1().SetNull()
	if err := admin.send(capsule(&aer, nil)); err != nil {
		t.Fatal(err)
	}
	h := g.connectQueue(rawOpts{qid: 1, depth: 32, dataSize: 1 << 20}, testSubNQN, testHostNQN)
	release := make(chan struct{})
	g.core.hold.Store(&release)
	const n = 16
	want := make([]byte, n*8192)
	fill(want, 3)
	copy(h.data(), want[:n/2*8192])
	copy(g.core.disk[1<<20:], want[n/2*8192:])
	for i := range n {
		op := uint8(nvme.IOWrite)
		if i >= n/2 {
			op = nvme.IORead
		}
		s := h.ioSQE(op, uint16(i), uint64(i)*8192, 8192, i*8192, 0)
		if op == nvme.IORead {
			s = h.ioSQE(op, uint16(i), 1<<20+uint64(i-n/2)*8192, 8192, i*8192, 0)
		}
		if err := h.send(capsule(&s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	g.waitHeld(n)
	closed := make(chan error, 1)
	go func() { closed <- g.l.Close() }()
	select {
	case <-ioDraining:
	case <-g.ctx.Done():
		t.Fatal("the I/O queue never started draining")
	}
	// A command arriving while the listener drains is neither executed
	// nor answered.
	late := h.ioSQE(nvme.IORead, 100, 0, 512, 0, 0)
	if err := h.send(capsule(&late, nil)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-dropped:
	case <-g.ctx.Done():
		t.Fatal("the late capsule was not dropped")
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the core held %d commands", err, n)
	default:
	}
	close(release)
	seen := 0
	for {
		rsp, err := h.response(g.ctx)
		if errors.Is(err, errQueueDead) {
			break
		}
		if err != nil {
			t.Fatalf("after %d CQEs: %v", seen, err)
		}
		if st := rsp.cqe.Status(); !st.OK() || rsp.cqe.CID() >= n {
			t.Fatalf("CQE cid %d status %v during the drain: only the %d executing commands may be answered, with success",
				rsp.cqe.CID(), st, n)
		}
		seen++
	}
	if seen != n {
		t.Fatalf("%d CQEs before the disconnect, want %d", seen, n)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !bytesEqual(g.core.disk[:n/2*8192], want[:n/2*8192]) || !bytesEqual(h.data()[n/2*8192:n*8192], want[n/2*8192:]) {
		t.Fatal("data of drained commands differs")
	}
	// The held AER is not answered either: the admin queue just ends.
	if rsp, err := admin.response(g.ctx); !errors.Is(err, errQueueDead) {
		t.Fatalf("admin queue after Close: CQE cid %d status %v (%v), want the queue dead", rsp.cqe.CID(), rsp.cqe.Status(), err)
	}
	if st := g.l.Stats(); st.Queues != 0 || st.DrainDropped != 1 || st.CommandErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	for _, q := range g.core.queueList() {
		if !q.destroyed.Load() {
			t.Fatal("a core queue was not destroyed")
		}
	}
}

func TestHostDisconnectWithIOInFlight(t *testing.T) {
	g := newRig(t, rigOpts{})
	h := g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN)
	release := make(chan struct{})
	g.core.hold.Store(&release)
	for i := range 8 {
		s := h.ioSQE(nvme.IORead, uint16(i), uint64(i)*4096, 4096, i*4096, 0)
		if err := h.send(capsule(&s, nil)); err != nil {
			t.Fatal(err)
		}
	}
	g.waitHeld(8)
	h.close()
	// The queue cannot be released while the core holds its requests: the
	// core still owns their data buffers.
	g.l.mu.Lock()
	n := len(g.l.queues)
	g.l.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d queues while the core holds requests", n)
	}
	close(release)
	g.waitQueues(0)
	if st := g.l.Stats(); st.Queues != 0 || st.QueueErrors != 0 {
		t.Fatalf("stats %+v", st)
	}
	g.core.hold.Store(nil)
	g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN)
}

func TestCoreClosesQueue(t *testing.T) {
	g := newRig(t, rigOpts{})
	h := g.connectQueue(rawOpts{qid: 1, depth: 8}, testSubNQN, testHostNQN)
	other := g.connectQueue(rawOpts{qid: 1, depth: 8}, testSubNQN, testHostNQN)
	qs := g.core.queueList()
	qs[0].conn.Close() // keep-alive expiry, say
	qs[0].conn.Close() // idempotent
	if _, err := h.response(g.ctx); !errors.Is(err, errQueueDead) {
		t.Fatalf("%v, want the queue dead", err)
	}
	g.waitQueues(1)
	if !qs[0].destroyed.Load() || qs[1].destroyed.Load() {
		t.Fatal("wrong core queue destroyed")
	}
	checkAlive(t, g, other, 1, 0)
}

func TestDrainTimeoutDisconnects(t *testing.T) {
	g := newRig(t, rigOpts{cfg: Config{DrainTimeout: 20 * time.Millisecond}})
	h := g.connectQueue(rawOpts{qid: 1, depth: 8}, testSubNQN, testHostNQN)
	release := make(chan struct{})
	g.core.hold.Store(&release)
	s := h.ioSQE(nvme.IORead, 1, 0, 4096, 0, 0)
	if err := h.send(capsule(&s, nil)); err != nil {
		t.Fatal(err)
	}
	g.waitHeld(1)
	closed := make(chan error, 1)
	go func() { closed <- g.l.Close() }()
	// The drain gives up: the connection is cut although the core still
	// holds the command...
	if _, err := h.response(g.ctx); !errors.Is(err, errQueueDead) {
		t.Fatalf("%v, want the queue dead after the drain timeout", err)
	}
	// ...but Close still waits for the core to hand the request back.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the core held a request", err)
	default:
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-g.ctx.Done():
		t.Fatal("Close did not return")
	}
}
