//go:build linux

package ublktest

import (
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/rdmablk/rdmablk/ublk"
)

// Mem is a memory-backed ublk.Backend for tests: the volume and every
// tag's buffer are mappings outside the Go heap, like the initiator's
// registered memory. Requests run on one worker goroutine per queue, so
// completions arrive from another goroutine while the ublk queue sleeps,
// as the initiator's will.
type Mem struct {
	geo ublk.Geometry
	// Data is the volume.
	Data   []byte
	mu     sync.RWMutex // guards Data's contents against overlapping requests of different queues
	ops    [5]atomic.Uint64
	fuas   atomic.Uint64
	failOp atomic.Int32 // op whose next request fails with EIO; -1: none
}

// Ops is how many requests of op the backend executed.
func (b *Mem) Ops(op ublk.Op) uint64 { return b.ops[op].Load() }

// FUAs is how many requests carried FUA.
func (b *Mem) FUAs() uint64 { return b.fuas.Load() }

// FailNext makes the next request of op fail with EIO.
func (b *Mem) FailNext(op ublk.Op) { b.failOp.Store(int32(op)) }

// NewMem returns a Mem of g's size (anonymous memory).
func NewMem(g ublk.Geometry) *Mem {
	mem, err := syscall.Mmap(-1, 0, int(g.Blocks)*int(g.LogicalBlockSize), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(err)
	}
	b := &Mem{geo: g, Data: mem}
	b.failOp.Store(-1)
	return b
}

// NewSharedMem keeps the volume in a shared mapping of path (a
// tmpfs file), so that it outlives a server process killed with -9.
func NewSharedMem(path string, g ublk.Geometry) (*Mem, error) {
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
	b := &Mem{geo: g, Data: mem}
	b.failOp.Store(-1)
	return b, nil
}

// Geometry implements ublk.Backend.
func (b *Mem) Geometry() ublk.Geometry { return b.geo }

// OpenQueue implements ublk.Backend.
func (b *Mem) OpenQueue(q, depth int, done ublk.Completer) (ublk.BackendQueue, error) {
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
	req *ublk.Request
}

type memQueue struct {
	b      *Mem
	done   ublk.Completer
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

func (q *memQueue) Submit(tag uint16, req *ublk.Request) { q.work <- memWork{tag, req} }

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
			case ublk.OpRead:
				b.mu.RLock()
				copy(r.Data, b.Data[r.Offset:])
				b.mu.RUnlock()
			case ublk.OpWrite:
				b.mu.Lock()
				copy(b.Data[r.Offset:], r.Data)
				b.mu.Unlock()
			case ublk.OpDiscard, ublk.OpWriteZeroes:
				b.mu.Lock()
				clear(b.Data[r.Offset : r.Offset+r.Length])
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
