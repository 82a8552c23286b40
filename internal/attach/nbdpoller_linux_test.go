package attach

import (
	"bytes"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
)

// armCounting is the attachment's NBD backend with each queue's Arm
// counted by what it returned: a descriptor to wait for, or none.
type armCounting struct {
	nbdBackend
	fds, none *atomic.Int32
}

func (b armCounting) OpenQueue(depth int) (nbd.AsyncQueue, error) {
	q, err := b.nbdBackend.OpenQueue(depth)
	if err != nil {
		return nil, err
	}
	return &armCountingQueue{nbdQueue: q.(*nbdQueue), b: b}, nil
}

type armCountingQueue struct {
	*nbdQueue
	b armCounting
}

func (q *armCountingQueue) Arm(signalled bool) (int, uint64) {
	fd, key := q.nbdQueue.Arm(signalled)
	if fd >= 0 {
		q.b.fds.Add(1)
	} else {
		q.b.none.Add(1)
	}
	return fd, key
}

// TestNBDBackendPollLoop: over a Unix socket the nbd server runs each
// connection's poll loop on the attachment's queue (an nbd.Poller: the
// initiator Submitter's Arm hands it the soft CQ's descriptor), and
// concurrent writes and reads on two connections over two queues of
// depth 4 read back what was written.
func TestNBDBackendPollLoop(t *testing.T) {
	sess := nbdSession(t, 2, 4)
	be := armCounting{nbdBackend: newNBDBackend(sess), fds: new(atomic.Int32), none: new(atomic.Int32)}
	sock := nbdServe(t, be)
	var wg sync.WaitGroup
	for conn := range 2 {
		c := nbdClient(t, sock)
		for g := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, got := make([]byte, 4096), make([]byte, 4096)
				for i := range 40 {
					off := int64(conn*6+g)*64<<10 + int64(i%16)*4096
					binary.LittleEndian.PutUint64(p, uint64(off)^uint64(i))
					if _, err := c.WriteAt(p, off); err != nil {
						t.Error(err)
						return
					}
					if _, err := c.ReadAt(got, off); err != nil || !bytes.Equal(got, p) {
						t.Errorf("conn %d goroutine %d: read back %v", conn, g, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if be.fds.Load() == 0 {
		t.Fatalf("no Arm returned the queue's descriptor (%d returned none): the poll loop did not wait for the CQ", be.none.Load())
	}
}
