// Package ublktest holds the contract suite every ublk.Backend must pass
// (RunBackendSuite) and Mem, a memory-backed Backend for tests.
package ublktest

import (
	"bytes"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/ublk"
)

// RunBackendSuite checks b against the ublk.Backend contract, driving it
// as the ublk queues do (no kernel needed): geometry the driver accepts;
// per queue, a buffer of at least MaxTransfer for every tag, the tags'
// buffers disjoint; depth requests in flight at once; every request
// completed exactly once, from any goroutine; writes read back (FUA too),
// the first and last blocks and MaxTransfer-sized requests included;
// flush; write-zeroes reads zeroes; discard; Close after the last
// completion. The suite writes over the whole volume's edges: give it a
// scratch volume.
func RunBackendSuite(t *testing.T, b ublk.Backend) {
	g := b.Geometry()
	lbs := uint64(g.LogicalBlockSize)
	if lbs < 512 || lbs > 4096 || lbs&(lbs-1) != 0 || g.Blocks == 0 || g.Queues < 1 || g.Depth < 1 || g.Depth > 4096 ||
		g.MaxTransfer < 4096 || g.MaxTransfer%4096 != 0 || (g.PhysicalBlockSize != 0 && g.PhysicalBlockSize < g.LogicalBlockSize) {
		t.Fatalf("geometry the driver would refuse: %+v", g)
	}
	size := g.Blocks * lbs
	for q := range g.Queues {
		t.Run(fmt.Sprintf("queue%d", q), func(t *testing.T) {
			c := newCompleter(g.Depth)
			bq, err := b.OpenQueue(q, g.Depth, c)
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					bq.Close()
				}
			}()
			checkBuffers(t, bq, g)
			reqs := make([]ublk.Request, g.Depth)
			run := func(tags []uint16, prep func(tag uint16, r *ublk.Request)) {
				t.Helper()
				for _, tag := range tags {
					prep(tag, &reqs[tag])
					c.expect(t, tag)
					bq.Submit(tag, &reqs[tag])
				}
				if f, ok := bq.(ublk.Flusher); ok { // a batching backend: as the queue goroutine does
					f.Flush()
				}
				for range tags {
					tag, errno := c.wait(t)
					if errno != 0 {
						t.Fatalf("tag %d: %v: %v", tag, &reqs[tag], errno)
					}
				}
			}
			all := make([]uint16, g.Depth)
			for i := range all {
				all[i] = uint16(i)
			}
			// depth writes in flight, then depth reads; one region per
			// tag, spread from the first block to the last.
			chunk := min(uint64(g.MaxTransfer), size/uint64(g.Depth)/lbs*lbs)
			if chunk == 0 {
				t.Fatalf("volume of %d bytes is too small for depth %d", size, g.Depth)
			}
			stride := uint64(0)
			if g.Depth > 1 {
				stride = (size - chunk) / uint64(g.Depth-1) / lbs * lbs
			}
			at := func(tag uint16) uint64 {
				if int(tag) == g.Depth-1 {
					return size - chunk
				}
				return uint64(tag) * stride
			}
			tags := all
			pattern := func(tag uint16, seed byte, p []byte) {
				for i := range p {
					p[i] = byte(i*7) ^ byte(tag) ^ seed
				}
			}
			run(tags, func(tag uint16, r *ublk.Request) {
				buf := bq.Buffer(tag)[:chunk]
				pattern(tag, byte(q), buf)
				*r = ublk.Request{Op: ublk.OpWrite, FUA: tag%2 == 0, Offset: at(tag), Length: chunk, Data: buf}
			})
			run(tags, func(tag uint16, r *ublk.Request) {
				buf := bq.Buffer(tag)[:chunk]
				clear(buf)
				*r = ublk.Request{Op: ublk.OpRead, Offset: at(tag), Length: chunk, Data: buf}
			})
			want := make([]byte, chunk)
			for _, tag := range tags {
				pattern(tag, byte(q), want)
				if !bytes.Equal(reqs[tag].Data, want) {
					t.Fatalf("tag %d: read at %d does not return what was written", tag, at(tag))
				}
			}
			run(all[:1], func(tag uint16, r *ublk.Request) { *r = ublk.Request{Op: ublk.OpFlush} })
			if g.MaxWriteZeroesBlocks > 0 {
				n := min(chunk, uint64(g.MaxWriteZeroesBlocks)*lbs)
				run(all[:1], func(tag uint16, r *ublk.Request) {
					*r = ublk.Request{Op: ublk.OpWriteZeroes, Offset: at(tags[0]), Length: n}
				})
				run(all[:1], func(tag uint16, r *ublk.Request) {
					buf := bq.Buffer(tag)[:n]
					for i := range buf {
						buf[i] = 0xa5
					}
					*r = ublk.Request{Op: ublk.OpRead, Offset: at(tags[0]), Length: n, Data: buf}
				})
				if !bytes.Equal(reqs[0].Data, make([]byte, n)) {
					t.Fatal("write-zeroes range does not read zeroes")
				}
			}
			if g.MaxDiscardBlocks > 0 {
				n := min(chunk, uint64(g.MaxDiscardBlocks)*lbs)
				run(all[:1], func(tag uint16, r *ublk.Request) {
					*r = ublk.Request{Op: ublk.OpDiscard, Offset: at(tags[0]), Length: n}
				})
			}
			closed = true
			if err := bq.Close(); err != nil {
				t.Fatal(err)
			}
			c.checkNoExtra(t)
		})
	}
}

// checkBuffers: every tag's buffer holds MaxTransfer, and no two tags'
// buffers overlap (the kernel fills them concurrently).
func checkBuffers(t *testing.T, bq ublk.BackendQueue, g ublk.Geometry) {
	t.Helper()
	type span struct{ lo, hi uintptr }
	var spans []span
	for tag := range g.Depth {
		b := bq.Buffer(uint16(tag))
		if uint64(len(b)) < uint64(g.MaxTransfer) {
			t.Fatalf("Buffer(%d) has %d bytes, want ≥ %d", tag, len(b), g.MaxTransfer)
		}
		lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		spans = append(spans, span{lo, lo + uintptr(len(b))})
	}
	for i, a := range spans {
		for j, b := range spans[:i] {
			if a.lo < b.hi && b.lo < a.hi {
				t.Fatalf("buffers of tags %d and %d overlap", j, i)
			}
		}
	}
}

// completer checks exactly-once completion of the tags it expects.
type completer struct {
	mu      sync.Mutex // guards pending and extra
	pending []bool
	extra   []string
	ch      chan [2]int
}

func newCompleter(depth int) *completer {
	return &completer{pending: make([]bool, depth), ch: make(chan [2]int, depth)}
}

func (c *completer) expect(t *testing.T, tag uint16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[tag] {
		t.Fatalf("tag %d submitted twice", tag)
	}
	c.pending[tag] = true
}

func (c *completer) Complete(tag uint16, errno syscall.Errno) {
	c.mu.Lock()
	if int(tag) >= len(c.pending) || !c.pending[tag] {
		c.extra = append(c.extra, fmt.Sprintf("tag %d completed without a request in flight", tag))
		c.mu.Unlock()
		return
	}
	c.pending[tag] = false
	c.mu.Unlock()
	c.ch <- [2]int{int(tag), int(errno)}
}

func (c *completer) wait(t *testing.T) (uint16, syscall.Errno) {
	t.Helper()
	select {
	case v := <-c.ch:
		return uint16(v[0]), syscall.Errno(v[1])
	case <-time.After(30 * time.Second):
		t.Fatal("a request was not completed within 30 s")
	}
	return 0, 0
}

func (c *completer) checkNoExtra(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.extra {
		t.Error(e)
	}
}
