package target

import (
	"errors"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/internal/syncbuf"
	"github.com/rdmablk/rdmablk/nvme"
)

const noSpaceLine = "backing store full"

// TestNoSpaceIsCapacityExceeded: a backing store that is full (the
// blockdev sentinel, or ENOSPC / EDQUOT passed through) answers Capacity
// Exceeded with DNR on the inline, worker and asynchronous paths — never
// Internal Error — and is counted per namespace and per target.
func TestNoSpaceIsCapacityExceeded(t *testing.T) {
	want := nvme.StatusCapacityExceeded.WithDNR()
	errs := []error{
		blockdev.ErrNoSpace,
		fmt.Errorf("pwrite: %w", syscall.ENOSPC),
		fmt.Errorf("pwrite: %w", syscall.EDQUOT),
	}
	for _, err := range errs {
		t.Run(err.Error(), func(t *testing.T) {
			be := errBackend{mem.New(8, 512), err}
			// Inline backend, a worker-pool backend and an async one.
			worker := &countingBackend{Backend: errBackend{mem.New(8, 512), err}}
			async := &asyncBackend{Backend: &countingBackend{Backend: errBackend{mem.New(8, 512), err}}, bufs: make(chan []byte, 16)}
			s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be},
				NamespaceConfig{NSID: 2, Backend: worker}, NamespaceConfig{NSID: 3, Backend: async})
			for nsid := uint32(1); nsid <= 3; nsid++ {
				s.io.expect(rw(nvme.IOWrite, nsid, 0, 1, 0), make([]byte, 512), want)
				var fl nvme.SQE
				fl.SetFlush(nsid)
				s.io.expect(fl, nil, want)
				st, e := s.sub.NamespaceStats(nsid)
				if e != nil || st.CapacityExceeded != 2 {
					t.Fatalf("nsid %d: stats %+v, %v; want 2 capacity exceeded", nsid, st, e)
				}
			}
			if async.submitted.Load() != 1 {
				t.Fatalf("async path not taken: %d submitted", async.submitted.Load())
			}
			// A flush of every namespace (NSID FFFFFFFFh) too.
			var all nvme.SQE
			all.SetFlush(nsidBroadcast)
			s.io.expect(all, nil, want)
			if n := s.tg.Stats().CapacityExceeded; n != 7 {
				t.Fatalf("target CapacityExceeded %d, want 7", n)
			}
		})
	}
}

// TestNoSpaceLoggedOncePerMinute: a namespace that keeps hitting a full
// backing store logs one line per minute, not one per command; another
// namespace logs its own.
func TestNoSpaceLoggedOncePerMinute(t *testing.T) {
	var logs syncbuf.Buffer
	clk := newFakeClock()
	be := errBackend{mem.New(8, 512), blockdev.ErrNoSpace}
	be2 := errBackend{mem.New(8, 512), blockdev.ErrNoSpace}
	s := newIOSetup(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), clock: clk},
		NamespaceConfig{NSID: 1, Backend: be}, NamespaceConfig{NSID: 2, Backend: be2})
	write := func(nsid uint32) {
		t.Helper()
		s.io.expect(rw(nvme.IOWrite, nsid, 0, 1, 0), make([]byte, 512), nvme.StatusCapacityExceeded.WithDNR())
	}
	for range 5 {
		write(1)
	}
	if n := logs.Count(noSpaceLine); n != 1 {
		t.Fatalf("%d log lines after 5 errors, want 1", n)
	}
	write(2)
	if n := logs.Count(noSpaceLine); n != 2 {
		t.Fatalf("%d log lines after the second namespace failed, want 2", n)
	}
	clk.Advance(59 * time.Second)
	write(1)
	if n := logs.Count(noSpaceLine); n != 2 {
		t.Fatalf("%d log lines within the minute, want 2", n)
	}
	clk.Advance(time.Second)
	write(1)
	if n := logs.Count(noSpaceLine); n != 3 {
		t.Fatalf("%d log lines a minute later, want 3", n)
	}
}

// TestOtherErrorsStayInternal: errors that are not about space keep their
// mapping (an unknown error is still Internal Error).
func TestOtherErrorsStayInternal(t *testing.T) {
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: errBackend{mem.New(8, 512), errors.New("EIO")}})
	s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), nvme.StatusInternalError)
	if n := s.tg.Stats().CapacityExceeded; n != 0 {
		t.Fatalf("CapacityExceeded %d", n)
	}
}
