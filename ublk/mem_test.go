//go:build linux

package ublk

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"
)

// memBackend is a memory-backed Backend for tests: the volume and every
// tag's buffer are anonymous mappings (outside the Go heap, like the
// initiator's registered memory). Requests run on one worker goroutine
// per queue, so completions arrive from another goroutine while the queue
// sleeps, as the initiator's will.
type memBackend struct {
	geo  Geometry
	mem  []byte
	mu   sync.RWMutex // guards mem contents against overlapping requests of different queues
	ops  [5]atomic.Uint64
	fuas atomic.Uint64
	// failNext makes the next request of this op fail with EIO (tests).
	failOp atomic.Int32
}

func newMemBackend(g Geometry) *memBackend {
	mem, err := syscall.Mmap(-1, 0, int(g.Blocks)*int(g.LogicalBlockSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	b := &memBackend{geo: g, mem: mem}
	b.failOp.Store(-1)
	return b
}

// newSharedMemBackend keeps the volume in a shared mapping of path (a
// tmpfs file), so that it outlives a server process killed with -9.
func newSharedMemBackend(path string, g Geometry) (*memBackend, error) {
	size := int64(g.Blocks) * int64(g.LogicalBlockSize)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	b := &memBackend{geo: g, mem: mem}
	b.failOp.Store(-1)
	return b, nil
}

func (b *memBackend) Geometry() Geometry { return b.geo }

func (b *memBackend) OpenQueue(q, depth int, done Completer) (BackendQueue, error) {
	size := depth * int(b.geo.MaxTransfer)
	bufs, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	mq := &memQueue{b: b, done: done, bufs: bufs, max: int(b.geo.MaxTransfer), work: make(chan memWork, depth)}
	mq.wg.Add(1)
	go mq.worker()
	return mq, nil
}

type memWork struct {
	tag uint16
	req *Request
}

type memQueue struct {
	b      *memBackend
	done   Completer
	bufs   []byte
	max    int
	work   chan memWork
	wg     sync.WaitGroup
	closed atomic.Bool
}

func (q *memQueue) Buffer(tag uint16) []byte {
	o := int(tag) * q.max
	return q.bufs[o : o+q.max : o+q.max]
}

func (q *memQueue) Submit(tag uint16, req *Request) { q.work <- memWork{tag, req} }

func (q *memQueue) worker() {
	defer q.wg.Done()
	b := q.b
	for w := range q.work {
		r := w.req
		var errno syscall.Errno
		if b.failOp.CompareAndSwap(int32(r.Op), -1) {
			errno = syscall.EIO
		} else {
			b.ops[r.Op].Add(1)
			if r.FUA {
				b.fuas.Add(1)
			}
			switch r.Op {
			case OpRead:
				b.mu.RLock()
				copy(r.Data, b.mem[r.Offset:])
				b.mu.RUnlock()
			case OpWrite:
				b.mu.Lock()
				copy(b.mem[r.Offset:], r.Data)
				b.mu.Unlock()
			case OpDiscard, OpWriteZeroes:
				b.mu.Lock()
				clear(b.mem[r.Offset : r.Offset+r.Length])
				b.mu.Unlock()
			}
		}
		q.done.Complete(w.tag, errno)
	}
}

func (q *memQueue) Close() error {
	if q.closed.Swap(true) {
		panic("memQueue closed twice")
	}
	close(q.work)
	q.wg.Wait()
	return syscall.Munmap(q.bufs)
}
