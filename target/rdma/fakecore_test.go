package rdma

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// fakeCore is a minimal core for transport tests: Connect and property
// commands succeed, Read/Write move bytes of a RAM disk (512-byte blocks),
// AERs are held until Destroy. It checks the transport's contract: Length
// and len(Data) agree, and Data is the right size for the command.
type fakeCore struct {
	disk []byte
	// async completes I/O on another goroutine (Complete) instead of inline.
	async atomic.Bool
	// hold, when set, parks I/O commands until release is closed.
	hold    atomic.Pointer[chan struct{}]
	held    atomic.Int64
	heldEv  chan struct{} // one event per parked command
	refuseQ atomic.Bool

	mu       sync.Mutex
	ports    map[uint16]target.Port
	queues   []*fakeQueue
	removed  []uint16
	contract []string // contract violations seen
}

func newFakeCore(diskBytes int) *fakeCore {
	return &fakeCore{disk: make([]byte, diskBytes), ports: map[uint16]target.Port{}, heldEv: make(chan struct{}, 4096)}
}

var errFakeRefused = errors.New("fake core: queue refused")

func (c *fakeCore) AddPort(p target.Port) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ports[p.ID] = p
	return nil
}

func (c *fakeCore) RemovePort(id uint16) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.ports, id)
	c.removed = append(c.removed, id)
	return nil
}

func (c *fakeCore) NewQueue(portID uint16, conn target.QueueConn, depth int) (coreQueue, error) {
	if c.refuseQ.Load() {
		return nil, errFakeRefused
	}
	q := &fakeQueue{c: c, conn: conn, depth: depth}
	c.mu.Lock()
	c.queues = append(c.queues, q)
	c.mu.Unlock()
	return q, nil
}

func (c *fakeCore) violation(s string) {
	c.mu.Lock()
	c.contract = append(c.contract, s)
	c.mu.Unlock()
}

func (c *fakeCore) violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.contract...)
}

func (c *fakeCore) queueList() []*fakeQueue {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*fakeQueue(nil), c.queues...)
}

type fakeQueue struct {
	c         *fakeCore
	conn      target.QueueConn
	depth     int
	qid       uint16
	head      uint16
	destroyed atomic.Bool
	executed  atomic.Int64

	mu   sync.Mutex
	aers []*target.Request // held AERs (guarded by mu)
	// lastConnectData is the Connect data of the last Connect.
	lastConnect nvme.ConnectData
}

func (q *fakeQueue) QID() uint16 { return q.qid }

func (q *fakeQueue) Consume() uint16 {
	q.head++
	return q.head
}

func (q *fakeQueue) Destroy() {
	if q.destroyed.Swap(true) {
		q.c.violation("Destroy called twice")
		return
	}
	q.mu.Lock()
	aers := q.aers
	q.aers = nil
	q.mu.Unlock()
	for _, r := range aers {
		r.CQE.SetStatus(nvme.StatusAbortSQDeleted)
		q.conn.Complete(r)
	}
}

func (q *fakeQueue) Execute(r *target.Request) bool {
	q.executed.Add(1)
	r.CQE = nvme.CQE{}
	r.CQE.SetCID(r.SQE.CID())
	r.CQE.SetSQID(q.qid)
	q.head++
	r.CQE.SetSQHD(q.head)
	if int(r.Length) != len(r.Data) {
		q.c.violation("Length != len(Data)")
	}
	if q.destroyed.Load() {
		q.c.violation("Execute after Destroy")
	}
	sqe := &r.SQE
	if sqe.IsFabrics() {
		switch sqe.FCType() {
		case nvme.FabricsConnect:
			d, err := nvme.ParseConnectData(r.Data)
			if err != nil {
				r.CQE.SetStatus(nvme.StatusInvalidField.WithDNR())
				return true
			}
			q.mu.Lock()
			q.lastConnect = d
			q.mu.Unlock()
			q.qid = nvme.ConnectCmd{SQE: sqe}.QID()
			r.CQE.SetSQID(q.qid)
			r.CQE.SetDW0(1) // CNTLID
		case nvme.FabricsPropertyGet, nvme.FabricsPropertySet:
		default:
			r.CQE.SetStatus(nvme.StatusInvalidOpcode.WithDNR())
		}
		return true
	}
	if q.qid == 0 {
		switch sqe.Opcode() {
		case nvme.AdminAsyncEvent:
			q.mu.Lock()
			q.aers = append(q.aers, r)
			q.mu.Unlock()
			return false
		case nvme.AdminKeepAlive:
			return true
		}
		r.CQE.SetStatus(nvme.StatusInvalidOpcode.WithDNR())
		return true
	}
	switch sqe.Opcode() {
	case nvme.IORead, nvme.IOWrite:
	case nvme.IOFlush:
		return true
	default:
		r.CQE.SetStatus(nvme.StatusInvalidOpcode.WithDNR())
		return true
	}
	if h := q.c.hold.Load(); h != nil {
		q.c.held.Add(1)
		q.c.heldEv <- struct{}{}
		go func() {
			<-*h
			q.io(r)
			q.conn.Complete(r)
		}()
		return false
	}
	if q.c.async.Load() {
		go func() {
			q.io(r)
			q.conn.Complete(r)
		}()
		return false
	}
	q.io(r)
	return true
}

// io moves the data of a Read or Write (512-byte blocks).
func (q *fakeQueue) io(r *target.Request) {
	rw := nvme.RWCmd{SQE: &r.SQE}
	off := rw.SLBA() * 512
	n := uint64(rw.NLB()) * 512
	if n != uint64(r.Length) {
		r.CQE.SetStatus(nvme.StatusDataSGLLengthInvalid.WithDNR())
		return
	}
	if off+n > uint64(len(q.c.disk)) {
		r.CQE.SetStatus(nvme.StatusLBAOutOfRange.WithDNR())
		return
	}
	if r.SQE.Opcode() == nvme.IORead {
		copy(r.Data, q.c.disk[off:off+n])
	} else {
		copy(q.c.disk[off:off+n], r.Data)
	}
}
