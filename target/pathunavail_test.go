package target

import (
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestPathUnavailableIsANAInaccessible: a backend error wrapping
// blockdev.ErrPathUnavailable — the mirror's ErrFenced and ErrLocalFaulted
// as the mirror returns them (wrapped, the latter together with the local
// leg's medium error or closed backend) — answers Asymmetric Access
// Inaccessible without DNR on the inline, worker and asynchronous paths,
// for writes, reads and flushes, so a multipath host retries on another
// controller; never Write Fault, Namespace Not Ready or Internal Error.
func TestPathUnavailableIsANAInaccessible(t *testing.T) {
	want := nvme.StatusANAInaccessible
	if want.SCT() != 3 || want.SC() != 0x02 || want.DNR() {
		t.Fatalf("StatusANAInaccessible is %#x, want SCT 3h SC 02h without DNR", uint16(want))
	}
	errs := []error{
		blockdev.ErrPathUnavailable,
		fmt.Errorf("%w: leg %q: no quorum", mirror.ErrFenced, "node2"),
		fmt.Errorf("%w: %q: %w", mirror.ErrLocalFaulted, "local", blockdev.ErrMedium),
		fmt.Errorf("%w: %q: %w", mirror.ErrLocalFaulted, "local", blockdev.ErrClosed),
	}
	for _, err := range errs {
		t.Run(err.Error(), func(t *testing.T) {
			be := errBackend{mem.New(8, 512), err}
			worker := &countingBackend{Backend: errBackend{mem.New(8, 512), err}}
			async := &asyncBackend{Backend: &countingBackend{Backend: errBackend{mem.New(8, 512), err}}, bufs: make(chan []byte, 16)}
			s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be},
				NamespaceConfig{NSID: 2, Backend: worker}, NamespaceConfig{NSID: 3, Backend: async})
			for nsid := uint32(1); nsid <= 3; nsid++ {
				s.io.expect(rw(nvme.IOWrite, nsid, 0, 1, 0), make([]byte, 512), want)
				s.io.expect(rw(nvme.IORead, nsid, 0, 1, 0), make([]byte, 512), want)
				var fl nvme.SQE
				fl.SetFlush(nsid)
				s.io.expect(fl, nil, want)
			}
			if async.submitted.Load() != 2 { // the write and the read
				t.Fatalf("async path not taken: %d submitted", async.submitted.Load())
			}
		})
	}
}
