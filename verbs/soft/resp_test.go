package soft

import (
	"net"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// TestEnginesDoneReleaseQueuedReads: READ responses still queued when a
// QP's engines have exited (the link died under load) give back their
// references on the MR they read from, so that MR's Close returns without
// waiting for the QP to be destroyed first (a test's cleanup order, or an
// application's, may close the MR first; TestDisconnectUnderLoad hung
// there once in CI).
func TestEnginesDoneReleaseQueuedReads(t *testing.T) {
	p := New(Options{})
	defer p.Close()
	devs, err := p.Devices()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := devs[0].AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	vmr, err := pd.RegisterMemory(make([]byte, 8192), verbs.AccessLocalWrite|verbs.AccessRemoteRead)
	if err != nil {
		t.Fatal(err)
	}
	mr := vmr.(*memoryRegion)
	a, b := net.Pipe()
	defer b.Close()
	q := &qp{engines: 2, conn: a, engDone: make(chan struct{}), resp: make([]respItem, 4), state: qpRTS}
	for i := range 3 {
		if !mr.acquire() {
			t.Fatal("acquire")
		}
		q.mu.Lock()
		q.pushRespLocked(respItem{kind: respRead, msn: uint32(i), data: mr.buf[:4096], mr: mr})
		q.mu.Unlock()
	}
	q.engineDone()
	if n := mr.refs.Load(); n != 3 {
		t.Fatalf("one engine still runs: %d references, want the 3 queued", n)
	}
	q.engineDone() // the last: nothing will send them
	closed := make(chan error, 1)
	go func() { closed <- vmr.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("MR Close still waits for %d references held by a QP whose engines have exited", mr.refs.Load())
	}
	if q.respLen != 0 {
		t.Fatalf("%d responses left queued", q.respLen)
	}
}
