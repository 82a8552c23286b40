package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
)

// fillPattern writes the pseudo-random content of the blocks starting at
// lba into p: every 8-byte word is a splitmix64 of (seed, byte address),
// so any misplaced, stale or foreign block is detected.
func fillPattern(p []byte, seed uint64, lba uint64, bs int) {
	base := lba * uint64(bs)
	for i := 0; i+8 <= len(p); i += 8 {
		z := seed + base + uint64(i)
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		z ^= z >> 31
		for k := range 8 {
			p[i+k] = byte(z >> (8 * k))
		}
	}
}

// stripeIO drives one queue over its stripe of the namespace with the
// asynchronous API at the queue's depth: op is IOWrite (pattern out) or
// IORead (compare with the pattern).
func stripeIO(ctx context.Context, q *initiator.IOQueue, ns *initiator.Namespace, op initiator.IOOp,
	seed, first, blocks uint64, ioBlocks uint32, depth int) error {
	bs := ns.BlockSize()
	ios := make([]initiator.IO, depth)
	bufs := make([]*initiator.Buffer, depth)
	for i := range bufs {
		b, ok := q.AllocBuffer()
		if !ok {
			return fmt.Errorf("queue %d: no buffer %d", q.Index(), i)
		}
		bufs[i] = b
		defer q.FreeBuffer(b)
	}
	want := make([]byte, int(ioBlocks)*bs)
	next := first
	end := first + blocks
	outstanding := 0
	submit := func(i int) error {
		size := ioBlocks
		if op == initiator.IOWrite && i%2 == 1 {
			// Every other write is 4 KiB: it travels as in-capsule data.
			size = max(1, uint32(4096/bs))
		}
		n := uint32(min(uint64(size), end-next))
		ios[i] = initiator.IO{Op: op, NSID: ns.NSID(), LBA: next, Blocks: n, Buf: bufs[i], User: uint64(i)}
		if op == initiator.IOWrite {
			fillPattern(bufs[i].Bytes()[:int(n)*bs], seed, next, bs)
		} else {
			clear(bufs[i].Bytes()[:int(n)*bs])
		}
		next += uint64(n)
		outstanding++
		return q.Submit(&ios[i])
	}
	for i := 0; i < depth && next < end; i++ {
		if err := submit(i); err != nil {
			return err
		}
	}
	done := make([]*initiator.IO, depth)
	for outstanding > 0 {
		n := q.Poll(done)
		if n == 0 {
			if err := q.Wait(ctx); err != nil {
				return fmt.Errorf("queue %d wait: %w", q.Index(), err)
			}
			continue
		}
		for _, io := range done[:n] {
			outstanding--
			if err := io.Result(); err != nil {
				return fmt.Errorf("queue %d %v lba %d: %w", q.Index(), io.Op, io.LBA, err)
			}
			if op == initiator.IORead {
				got := io.Buf.Bytes()[:int(io.Blocks)*bs]
				fillPattern(want[:len(got)], seed, io.LBA, bs)
				if !bytes.Equal(got, want[:len(got)]) {
					return fmt.Errorf("queue %d: lba %d+%d differs from the pattern", q.Index(), io.LBA, io.Blocks)
				}
			}
			if next < end {
				if err := submit(int(io.User)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeReadVerify writes the pattern over the whole namespace using every
// I/O queue in parallel (one goroutine per queue, depth commands
// outstanding each), then reads it all back on different stripes and
// compares byte for byte.
func writeReadVerify(t *testing.T, c *initiator.Controller, ns *initiator.Namespace, depth int, seed uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nq := c.NumQueues()
	total := ns.Blocks()
	stripe := total / uint64(nq)
	maxBlocks := uint32(c.MaxTransfer() / ns.BlockSize())
	run := func(op initiator.IOOp, ioBlocks uint32, rotate int) {
		var wg sync.WaitGroup
		errs := make(chan error, nq)
		for i := range nq {
			s := (i + rotate) % nq // reads use another queue than the writes did
			first := uint64(s) * stripe
			n := stripe
			if s == nq-1 {
				n = total - first
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- stripeIO(ctx, c.Queue(i), ns, op, seed, first, n, ioBlocks, depth)
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	// Writes in 32 KiB commands (in-capsule data is ≤ 4 KiB, so these go by
	// RDMA READ), reads in the largest transfer the controller allows.
	run(initiator.IOWrite, min(maxBlocks, uint32(32<<10/ns.BlockSize())), 0)
	run(initiator.IORead, maxBlocks, 1)
}
