package initiator

import (
	"context"
	"fmt"
	"sync"
)

// borrow takes an I/O queue for a blocking call, waiting until one is
// free or the controller dies.
func (c *Controller) borrow() (*IOQueue, error) {
	if len(c.queues) == 0 {
		return nil, fmt.Errorf("%w: controller has no I/O queues", ErrNotSupported)
	}
	if c.isDead() {
		return nil, c.deadErr()
	}
	select {
	case q := <-c.freeQueues:
		return q, nil
	case <-c.done:
		return nil, c.deadErr()
	}
}

func (c *Controller) giveBack(q *IOQueue) { c.freeQueues <- q }

// doSync runs a blocking operation over blocks [lba, lba+blocks) (or
// len(p)/bs blocks when p is non-nil) on one borrowed queue, pipelining up
// to the queue depth. A read or write longer than one queue's pipeline
// (Depth commands of MaxTransfer) is also split across whatever other
// queues are free at that moment, one goroutine per extra queue. For reads
// and writes it returns the number of bytes of p known to be transferred
// before the first failure.
func (c *Controller) doSync(op IOOp, nsid uint32, bs int, p []byte, lba, blocks uint64, fua bool) (int, error) {
	if p != nil {
		blocks = uint64(len(p) / bs)
	}
	if blocks == 0 {
		return 0, nil
	}
	q, err := c.borrow()
	if err != nil {
		return 0, err
	}
	per := maxBlocksPerCommand(op, bs, q.maxTransfer)
	if p == nil || per == 0 || blocks <= per*uint64(q.Depth()) {
		defer c.giveBack(q)
		return q.runSyncLocked(op, nsid, bs, p, lba, blocks, fua)
	}
	qs := []*IOQueue{q}
	chunks := (blocks + per - 1) / per
	for uint64(len(qs)) < chunks/uint64(q.Depth())+1 {
		select {
		case extra := <-c.freeQueues:
			qs = append(qs, extra)
			continue
		default:
		}
		break
	}
	defer func() {
		for _, x := range qs {
			c.giveBack(x)
		}
	}()
	if len(qs) == 1 {
		return q.runSyncLocked(op, nsid, bs, p, lba, blocks, fua)
	}
	// Contiguous parts of whole commands, one per queue.
	partChunks := (chunks + uint64(len(qs)) - 1) / uint64(len(qs))
	type result struct {
		n   int
		err error
	}
	res := make([]result, len(qs))
	var wg sync.WaitGroup
	for i := range qs {
		first := uint64(i) * partChunks * per
		if first >= blocks {
			break
		}
		cnt := min(partChunks*per, blocks-first)
		sub := p[first*uint64(bs) : (first+cnt)*uint64(bs)]
		wg.Add(1)
		go func(i int, sub []byte, first, cnt uint64) {
			defer wg.Done()
			n, err := qs[i].runSyncLocked(op, nsid, bs, sub, lba+first, cnt, fua)
			res[i] = result{n, err}
		}(i, sub, first, cnt)
	}
	wg.Wait()
	done := 0
	for i := range res {
		if res[i].err != nil {
			return done + res[i].n, res[i].err
		}
		done += res[i].n
	}
	return done, nil
}

// runSyncLocked is runSync under the queue's life lock.
func (q *IOQueue) runSyncLocked(op IOOp, nsid uint32, bs int, p []byte, lba, blocks uint64, fua bool) (int, error) {
	q.life.RLock()
	defer q.life.RUnlock()
	if q.closed {
		return 0, ErrClosed
	}
	return q.runSync(op, nsid, bs, p, lba, blocks, fua)
}

// runSync is doSync on a queue the caller owns.
func (q *IOQueue) runSync(op IOOp, nsid uint32, bs int, p []byte, lba, blocks uint64, fua bool) (int, error) {
	data := op == IORead || op == IOWrite
	ch := newChunker(lba, blocks, maxBlocksPerCommand(op, bs, q.maxTransfer))
	free := q.syncFree[:0] // stack of unused preallocated IOs
	for i := range q.syncIOs {
		free = append(free, &q.syncIOs[i])
	}
	var doneArr [32]*IO
	done := doneArr[:]
	var (
		firstErr error
		failAt   = len(p)
		inflight int
	)
	fail := func(at int, err error) {
		if firstErr == nil {
			firstErr = err
		}
		if at < failAt {
			failAt = at
		}
	}
	for {
		for firstErr == nil && ch.more() && len(free) > 0 {
			var buf *Buffer
			if data {
				b, ok := q.pool.alloc()
				if !ok {
					break
				}
				buf = b
			}
			cl, cn, _ := ch.next()
			io := free[len(free)-1]
			free = free[:len(free)-1]
			off := int((cl - lba) * uint64(bs))
			*io = IO{Op: op, NSID: nsid, LBA: cl, Blocks: uint32(cn), FUA: fua, Buf: buf, User: uint64(off)}
			if op == IOWrite {
				copy(buf.b, p[off:off+int(cn)*bs])
			}
			if err := q.submit(io); err != nil {
				q.pool.release(buf)
				free = append(free, io)
				fail(off, err)
				break
			}
			inflight++
		}
		if inflight == 0 {
			break
		}
		if err := q.wait(context.Background()); err != nil && q.rLen == 0 {
			fail(failAt, err)
			break
		}
		n := q.reap(done)
		for _, io := range done[:n] {
			inflight--
			off := int(io.User)
			if err := io.Result(); err != nil {
				fail(off, err)
			} else if op == IORead {
				copy(p[off:off+int(io.Blocks)*bs], io.Buf.b)
			}
			q.pool.release(io.Buf)
			free = append(free, io)
		}
	}
	if firstErr != nil {
		if !data {
			failAt = 0
		}
		return failAt, firstErr
	}
	return len(p), nil
}
