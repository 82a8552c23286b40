package target

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
)

// growMem is a mem backend whose visible size grows in place
// (blockdev.Resizer) up to the mem backend's capacity.
type growMem struct {
	*mem.Backend
	blocks atomic.Uint64
}

func newGrowMem(blocks, capacity uint64) *growMem {
	g := &growMem{Backend: mem.New(capacity, 512)}
	g.blocks.Store(blocks)
	return g
}

func (g *growMem) Blocks() uint64 { return g.blocks.Load() }

func (g *growMem) Resize(blocks uint64) error {
	if blocks > g.Backend.Blocks() {
		return blockdev.ErrOutOfRange
	}
	g.blocks.Store(blocks)
	return nil
}

// handle is a wrapper that adds nothing to the data path: it unwraps to
// its backend and meters what the core reports.
type handle struct {
	blockdev.Backend // only to satisfy the interface: the core must not call it
	in               blockdev.Backend
	mu               sync.Mutex
	samples          []IOSample
}

func (h *handle) Unwrap() blockdev.Backend { return h.in }
func (h *handle) ReadAt([][]byte, uint64) error {
	panic("the core called the wrapper instead of the unwrapped backend")
}
func (h *handle) MeterIO(s IOSample) {
	h.mu.Lock()
	h.samples = append(h.samples, s)
	h.mu.Unlock()
}

// TestResizeNamespace: a namespace grows in place through the backend's
// Resizer — I/O beyond the old end works at once, Identify reports the new
// NSZE and the hosts get Namespace Attribute Changed; shrinking and
// backends that cannot resize are refused.
func TestResizeNamespace(t *testing.T) {
	g := newGrowMem(64, 256)
	// countingBackend hides every optional capability: no Resizer.
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: g},
		NamespaceConfig{NSID: 2, Backend: &countingBackend{Backend: mem.New(8, 512)}})
	s.admin.setFeature(nvme.FeatAsyncEventConfig, nvme.AECNSAttr, nvme.StatusSuccess)
	aer, done := s.admin.aer()
	if done {
		t.Fatal("AER completed")
	}
	s.io.expect(rw(nvme.IORead, 1, 100, 1, 0), make([]byte, 512), nvme.StatusLBAOutOfRange.WithDNR())
	if err := s.sub.ResizeNamespace(1, 128); err != nil {
		t.Fatal(err)
	}
	s.admin.wait(aer)
	if dw0 := aer.CQE.DW0(); dw0 != nvme.MakeAsyncEventResult(nvme.AsyncEventTypeNotice, nvme.AsyncEventNoticeNSChanged, nvme.LogChangedNSList) {
		t.Fatalf("AER result %#x", dw0)
	}
	s.io.expect(rw(nvme.IORead, 1, 100, 1, 0), make([]byte, 512), nvme.StatusSuccess)
	id, err := nvme.ParseIdentifyNamespace(s.admin.identify(nvme.CNSNamespace, 1, nvme.StatusSuccess))
	if err != nil || id.NSZE != 128 {
		t.Fatalf("NSZE %d (%v), want 128", id.NSZE, err)
	}
	if st, _ := s.sub.NamespaceStats(1); st.Blocks != 128 {
		t.Fatalf("stats %+v", st)
	}
	if err := s.sub.ResizeNamespace(1, 128); err != nil { // no change: no event
		t.Fatal(err)
	}
	if err := s.sub.ResizeNamespace(1, 100); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("shrink: %v", err)
	}
	if err := s.sub.ResizeNamespace(1, 1<<20); err == nil {
		t.Fatal("resize beyond the backend's capacity succeeded")
	}
	if err := s.sub.ResizeNamespace(2, 16); !errors.Is(err, ErrBadBackend) {
		t.Fatalf("resize of a backend without Resizer: %v", err)
	}
	if err := s.sub.ResizeNamespace(9, 16); !errors.Is(err, ErrNoNamespace) {
		t.Fatalf("resize of a missing namespace: %v", err)
	}
}

// TestUnwrapAndMeter: the core runs I/O on the backend a wrapper unwraps
// to (keeping its asynchronous path), resizes that backend, and reports
// every command to the wrapper's IOMeter, timing one in
// meterSampleEvery.
func TestUnwrapAndMeter(t *testing.T) {
	clk := newFakeClock()
	g := newGrowMem(64, 256)
	async := &asyncBackend{Backend: g, bufs: make(chan []byte, 256)}
	// A chain of two handles: both are followed.
	outer := &handle{in: &handle{in: asyncGrow{async, g}}}
	s := newIOSetup(t, Options{clock: clk}, NamespaceConfig{NSID: 1, Backend: outer})
	for i := range meterSampleEvery {
		op := uint8(nvme.IORead)
		if i%2 == 0 {
			op = nvme.IOWrite
		}
		s.io.expect(rw(op, 1, uint64(i), 1, 0), make([]byte, 512), nvme.StatusSuccess)
		<-async.bufs
	}
	var fl nvme.SQE
	fl.SetFlush(1)
	s.io.expect(fl, nil, nvme.StatusSuccess)
	s.io.expect(rw(nvme.IORead, 1, 200, 1, 0), make([]byte, 512), nvme.StatusLBAOutOfRange.WithDNR())
	if n := async.submitted.Load(); n != meterSampleEvery {
		t.Fatalf("%d I/Os on the unwrapped async path, want %d", n, meterSampleEvery)
	}
	if err := s.sub.ResizeNamespace(1, 256); err != nil {
		t.Fatalf("resize through the unwrapped backend: %v", err)
	}
	s.io.expect(rw(nvme.IORead, 1, 200, 1, 0), make([]byte, 512), nvme.StatusSuccess)
	<-async.bufs

	outer.mu.Lock()
	samples := append([]IOSample(nil), outer.samples...)
	outer.mu.Unlock()
	if len(samples) != meterSampleEvery+2 {
		t.Fatalf("%d samples, want %d (commands rejected before the backend are not metered)", len(samples), meterSampleEvery+2)
	}
	var reads, writes, flushes int
	for _, sm := range samples {
		switch sm.Op {
		case OpRead:
			reads++
		case OpWrite:
			writes++
		case OpFlush:
			flushes++
		}
		if sm.Failed || (sm.Op != OpFlush && sm.Bytes != 512) {
			t.Fatalf("sample %+v", sm)
		}
	}
	if reads != meterSampleEvery/2+1 || writes != meterSampleEvery/2 || flushes != 1 {
		t.Fatalf("%d reads %d writes %d flushes", reads, writes, flushes)
	}
	// The clock is read for one command in meterSampleEvery only (start
	// and end); the fake clock does not move, so the latency reads 0.
	if n := clk.nows.Load(); n != 2 {
		t.Fatalf("%d clock reads for %d metered commands, want 2", n, len(samples))
	}
}

// asyncGrow is an asynchronous backend that also resizes in place.
type asyncGrow struct {
	*asyncBackend
	g *growMem
}

func (a asyncGrow) Resize(blocks uint64) error { return a.g.Resize(blocks) }
