package initiator

import (
	"context"
	"fmt"
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
// to the queue depth. For reads and writes it returns the number of bytes
// of p known to be transferred before the first failure.
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
	defer c.giveBack(q)
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
