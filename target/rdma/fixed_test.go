package rdma

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// TestFixedBuffers: with a file backend on io_uring, the queue's
// registered memory is registered with the backend's ring as fixed
// buffers, so keyed (RDMA READ / WRITE) and in-capsule transfers go
// READ_FIXED / WRITE_FIXED straight between the file and that memory;
// tearing the connection down unregisters it.
func TestFixedBuffers(t *testing.T) {
	fb, err := file.Open(filepath.Join(t.TempDir(), "vol.img"), file.Options{Size: 16 << 20, BlockSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	tgt := target.New(target.Options{Logger: slog.New(slog.DiscardHandler)})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{
		NQN: testSubNQN, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: fb}},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tgt.Close(); err != nil {
			t.Errorf("target Close: %v", err)
		}
		_ = fb.Close()
	})
	g := newRig(t, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1}})
	// Small-buffer I/O: the region the core registers with the backend
	// holds the receive buffers and the first chunk of small data
	// buffers (queue.smallSize); larger commands use the large pool, not
	// pinned for io_uring.
	const size = smallDataSize
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: 8, dataSize: 2 * size})

	pattern := make([]byte, size)
	for i := range pattern {
		pattern[i] = byte(i*13 + i>>9)
	}
	copy(io.data()[:size], pattern)
	w := io.ioSQE(nvme.IOWrite, 10, 0, size, 0, 0) // keyed: RDMA READ, then WRITE_FIXED
	io.mustOK(g.ctx, &w, nil)
	var ic nvme.SQE // in-capsule: WRITE_FIXED from the receive buffer
	ic.SetRW(nvme.IOWrite, 1, size/512, 4096/512, 0)
	ic.SetCID(11)
	ic.SetPSDT(nvme.PSDTSGL)
	ic.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	if rsp, err := io.do(g.ctx, &ic, pattern[:4096]); err != nil || !rsp.cqe.Status().OK() {
		t.Fatalf("in-capsule write: %v %v", err, rsp.cqe.Status())
	}
	r := io.ioSQE(nvme.IORead, 12, 0, size, size, 0) // READ_FIXED, then RDMA WRITE
	io.mustOK(g.ctx, &r, nil)
	if !bytes.Equal(io.data()[size:2*size], pattern) {
		t.Fatal("data read back differs")
	}

	st := fb.Stats()
	switch {
	case st.AsyncIOs == 0:
		t.Skipf("file stats %+v: no io_uring O_DIRECT fast path on this host", st)
	case st.FixedRegions == 0:
		t.Skipf("file stats %+v: the kernel refused fixed buffers here", st)
	case st.AsyncIOs != 3 || st.FixedIOs != 3 || st.FixedRegions != 1:
		t.Fatalf("file stats %+v: want 3 async I/Os, all fixed, 1 region", st)
	}

	io.close()
	g.waitQueues(1) // the admin queue stays
	if st := fb.Stats(); st.FixedRegions != 0 {
		t.Fatalf("file stats %+v: the closed queue's region is still registered", st)
	}
}
