package nbd_test

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nbd"
)

// holdFirst holds every read of block 0 until release is closed.
type holdFirst struct {
	*memBackend
	held    chan struct{}
	release chan struct{}
}

func (h *holdFirst) ReadAt(p []byte, off int64) (int, error) {
	if off == 0 {
		h.held <- struct{}{}
		<-h.release
	}
	return h.memBackend.ReadAt(p, off)
}

// TestPipelinedOutOfOrderReplies: on ONE connection, a read the backend
// holds does not hold up the requests sent after it: they are executed
// and answered first (out of order, by cookie), and the held one is
// answered when the backend returns. The export advertises
// NBD_FLAG_CAN_MULTI_CONN, so clients may also open one connection per
// queue.
func TestPipelinedOutOfOrderReplies(t *testing.T) {
	be := &holdFirst{memBackend: newMem(1<<20, 512), held: make(chan struct{}, 1), release: make(chan struct{})}
	_, sock := serve(t, &nbd.Export{Name: "x", Backend: be})
	c := dial(t, sock, "x")
	if c.Flags&nbd.TFlagCanMultiConn == 0 {
		t.Fatalf("export flags %#x lack NBD_FLAG_CAN_MULTI_CONN", c.Flags)
	}
	first := make(chan error, 1)
	go func() {
		_, err := c.ReadAt(make([]byte, 4096), 0)
		first <- err
	}()
	select {
	case <-be.held:
	case <-time.After(30 * time.Second):
		t.Fatal("first read never reached the backend")
	}
	for i := 1; i <= 8; i++ {
		if _, err := c.ReadAt(make([]byte, 4096), int64(i)*4096); err != nil {
			t.Fatalf("read %d behind a held read: %v", i, err)
		}
	}
	select {
	case err := <-first:
		t.Fatalf("held read answered before its backend call returned: %v", err)
	default:
	}
	close(be.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}
