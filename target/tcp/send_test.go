package tcp

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// readCapsule appends the capsule of a read of n bytes at slba to b.
func (h *testHost) readCapsule(b []byte, slba uint64, n int) []byte {
	var sqe nvme.SQE
	sqe.SetRW(nvme.IORead, 1, slba, uint32(n/testBlock), 0)
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	setTransportSGL(&sqe, uint32(n))
	var c [256]byte
	k := tcppdu.PutCapsuleCmd(c[:], &sqe, 0, h.dg, 0)
	return append(b, c[:k]...)
}

// expectRead reads the C2HData and CapsuleResp of read cid and checks the
// data against want.
func (h *testHost) expectRead(cid uint16, want []byte) {
	h.t.Helper()
	var got []byte
	for {
		p := h.mustPDU()
		switch p.f.Type {
		case tcppdu.TypeC2HData:
			d, _ := tcppdu.ParseData(p.hdr, p.f)
			if d.CCCID != cid || int(d.DATAO) != len(got) {
				h.t.Fatalf("C2HData %+v, expected command %d at %d", d, cid, len(got))
			}
			got = append(got, p.data...)
		case tcppdu.TypeCapsuleResp:
			cqe, _ := tcppdu.ParseCapsuleResp(p.hdr)
			if cqe.CID() != cid || cqe.Status() != nvme.StatusSuccess {
				h.t.Fatalf("CQE CID %d status %v, expected command %d", cqe.CID(), cqe.Status(), cid)
			}
			if !bytes.Equal(got, want) {
				h.t.Fatalf("command %d: %d bytes read, not the backend's", cid, len(got))
			}
			return
		default:
			h.t.Fatalf("%s", tcppdu.TypeName(p.f.Type))
		}
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7) + byte(i>>12)
	}
	return b
}

// TestResponsesBatched: maxBatch reads that arrive together (one host
// write) are answered together — C2HData and CapsuleResp of every one
// in one socket write — not in a write (or two) per command.
func TestResponsesBatched(t *testing.T) {
	r := newRig(t, nil)
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	h := r.ioHost(t, admin, tcppdu.Digests{}, 8192)
	// Small reads: the whole batch (18 KiB) fits any socket buffer, so
	// the one write is never cut short.
	const n = testBlock
	pat := pattern(maxBatch*n, 1)
	if err := r.be.WriteAt([][]byte{pat}, 0, 0); err != nil {
		t.Fatal(err)
	}
	var b []byte
	first := h.cid + 1
	for i := range maxBatch {
		b = h.readCapsule(b, uint64(i*n/testBlock), n)
	}
	w0 := r.l.Stats().Writes
	h.write(b)
	for i := range maxBatch {
		h.expectRead(first+uint16(i), pat[i*n:(i+1)*n])
	}
	// One more command: the reader wrote the batch (and counted it)
	// before it read this one.
	var sqe nvme.SQE
	sqe.SetRW(nvme.IORead, 1, 0, 1, 0)
	h.must(&sqe, nil, n)
	if w := r.l.Stats().Writes - w0; w > 3 {
		t.Fatalf("%d socket writes for %d reads and one more", w, maxBatch)
	}
}

// signalBackend is a mem backend (non-blocking: the core runs it on the
// reader) that reports every write.
type signalBackend struct {
	*mem.Backend
	wrote chan struct{}
}

func (b *signalBackend) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	err := b.Backend.WriteAt(bufs, lba, f)
	select {
	case b.wrote <- struct{}{}:
	default:
	}
	return err
}

// TestReaderReadsWhileSocketFull: a host that stops reading while it
// sends (TCP flow control fills the target's socket) still has its
// commands read and executed — the reader never waits on a write, the
// writer goroutine finishes the responses once the host reads — and every
// byte arrives intact and in order.
func TestReaderReadsWhileSocketFull(t *testing.T) {
	be := &signalBackend{Backend: mem.New(testBlocks, testBlock), wrote: make(chan struct{}, 1)}
	r := newRigWith(t, be, nil)
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	h := dial(t, r.l.Addr(), tcppdu.Digests{Data: true})
	// A fixed small receive buffer: the host's window stays small.
	if err := h.nc.(*net.TCPConn).SetReadBuffer(64 << 10); err != nil {
		t.Fatal(err)
	}
	h.icd = 8192
	h.connect(1, 63, admin.cntlid)
	const n, reads = 1 << 20, 12 // 12 MiB of responses: more than the sockets hold
	pat := pattern(testBlocks*testBlock, 3)
	if err := be.Backend.WriteAt([][]byte{pat}, 0, 0); err != nil {
		t.Fatal(err)
	}
	var b []byte
	first := h.cid + 1
	for i := range reads {
		b = h.readCapsule(b, uint64(i%4*n/testBlock), n)
	}
	h.write(b)
	// The first response shows the target is writing them: now, reading
	// nothing more, send a write; the target must read and execute it
	// although its socket is full.
	h.expectRead(first, pat[:n])
	w := pattern(4096, 9)
	var sqe nvme.SQE
	sqe.SetRW(nvme.IOWrite, 1, 0, 4096/testBlock, 0)
	h.cid++
	sqe.SetCID(h.cid)
	sqe.SetPSDT(nvme.PSDTSGL)
	sqe.SGL1().SetDataBlock(0, 4096, nvme.SGLSubtypeOffset)
	h.sendCapsule(&sqe, w)
	select {
	case <-be.wrote:
	case <-time.After(hostTimeout):
		t.Fatal("the write was not executed while the target's socket was full")
	}
	for i := 1; i < reads; i++ {
		off := i % 4 * n
		h.expectRead(first+uint16(i), pat[off:off+n])
	}
	p := h.mustPDU()
	if cqe, _ := tcppdu.ParseCapsuleResp(p.hdr); p.f.Type != tcppdu.TypeCapsuleResp || cqe.CID() != h.cid || cqe.Status() != nvme.StatusSuccess {
		t.Fatalf("%s CID %d status %v", tcppdu.TypeName(p.f.Type), cqe.CID(), cqe.Status())
	}
	if st := r.l.Stats(); st.WriterHandoffs == 0 {
		t.Fatalf("no write was left to the writer goroutine: %+v", st)
	}
}

// blockingMem is a mem backend the core must run on its worker pool:
// completions come from worker goroutines, which then write the
// responses.
type blockingMem struct{ *mem.Backend }

func (blockingMem) NonBlocking() bool { return false }

// TestFullDepthStream: a host that keeps its queue full — a new command
// as soon as it sees each CQE — is never taken for one that overruns its
// queue, although a response's slot is freed only after the write that
// carries its CQE (spare slots and inWrite, send.go).
func TestFullDepthStream(t *testing.T) { fullDepthStream(t, nil) }

// fullDepthStream runs TestFullDepthStream's host against a rig with mod
// applied to its Config, and returns the rig.
func fullDepthStream(t *testing.T, mod func(*Config)) *rig {
	const depth = 32
	r := newRigWith(t, blockingMem{mem.New(testBlocks, testBlock)}, func(c *Config) {
		c.MaxQueueDepth = depth
		if mod != nil {
			mod(c)
		}
	})
	admin := r.adminHost(t, tcppdu.Digests{}, 8192)
	h := dial(t, r.l.Addr(), tcppdu.Digests{})
	h.connect(1, depth-1, admin.cntlid)
	const n, total = 4096, 3000
	var b []byte
	for i := range depth {
		b = h.readCapsule(b, uint64(i*n/testBlock), n)
	}
	h.write(b)
	for done, sent := 0, depth; done < total; {
		p := h.mustPDU()
		if p.f.Type != tcppdu.TypeCapsuleResp {
			continue
		}
		if cqe, _ := tcppdu.ParseCapsuleResp(p.hdr); cqe.Status() != nvme.StatusSuccess {
			t.Fatalf("CQE %d status %v", cqe.CID(), cqe.Status())
		}
		done++
		if sent < total {
			h.write(h.readCapsule(b[:0], uint64(sent%64*n/testBlock), n))
			sent++
		}
	}
	return r
}

// TestPortableSendPath: without raw socket access (other platforms)
// every write goes to the writer goroutine and every read may block; the
// batching, full-socket and full-depth cases still hold.
func TestPortableSendPath(t *testing.T) {
	noRaw = true
	t.Cleanup(func() { noRaw = false })
	t.Run("full socket", TestReaderReadsWhileSocketFull)
	t.Run("full depth", TestFullDepthStream)
	t.Run("queue depth", TestQueueDepth)
}
