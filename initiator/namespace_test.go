package initiator

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

func TestNamespaceGeometry(t *testing.T) {
	r := newFakeRig(t, 4, 4096, 100, 16<<10, 0)
	ns := r.ns
	if ns.NSID() != fakeNSID || ns.BlockSize() != 4096 || ns.Blocks() != 100 || ns.Size() != 409600 {
		t.Fatalf("nsid %d bs %d blocks %d size %d", ns.NSID(), ns.BlockSize(), ns.Blocks(), ns.Size())
	}
	got, err := r.c.Namespace(fakeNSID)
	if err != nil || got != ns {
		t.Fatalf("Namespace(1): %v %v", got, err)
	}
	if _, err := r.c.Namespace(2); !errors.Is(err, ErrNoNamespace) {
		t.Fatalf("Namespace(2): %v", err)
	}
	if l := r.c.Namespaces(); len(l) != 1 || l[0] != ns {
		t.Fatalf("Namespaces %v", l)
	}
}

func TestNamespaceUnalignedIsError(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	ns := r.ns
	buf := make([]byte, 1024)
	checks := map[string]error{}
	_, checks["read off"] = ns.ReadAt(buf, 100)
	_, checks["read len"] = ns.ReadAt(buf[:1000], 0)
	_, checks["read neg"] = ns.ReadAt(buf, -512)
	_, checks["write off"] = ns.WriteAt(buf, 1)
	_, checks["write len"] = ns.WriteAt(buf[:513], 512)
	checks["fua"] = ns.WriteFUA(buf[:3], 0)
	checks["zeroes"] = ns.WriteZeroes(0, 100)
	checks["dealloc"] = ns.Deallocate(7, 512)
	for name, err := range checks {
		if !errors.Is(err, ErrUnaligned) {
			t.Errorf("%s: %v, want ErrUnaligned", name, err)
		}
	}
	if r.qp.sends != 0 {
		t.Fatalf("%d unaligned commands reached the wire", r.qp.sends)
	}
}

func TestNamespaceReadWriteSpanningMaxTransfer(t *testing.T) {
	// 4 KiB MaxTransfer, depth 4: a 40-block write is 5 commands, more
	// than the depth, so the pipeline refills.
	r := newFakeRig(t, 4, 512, 256, 4096, 1024)
	r.qp.record = true
	ns := r.ns
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ off, n int64 }{
		{0, 512}, {512 * 3, 512 * 40}, {512 * 7, 4096}, {512 * 100, 512 * 9}, {512 * 255, 512},
	} {
		p := make([]byte, tc.n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		n, err := ns.WriteAt(p, tc.off)
		if err != nil || n != len(p) {
			t.Fatalf("WriteAt(%d, %d): %d %v", tc.off, tc.n, n, err)
		}
		if !bytes.Equal(r.qp.disk[tc.off:tc.off+tc.n], p) {
			t.Fatalf("disk differs after WriteAt(%d, %d)", tc.off, tc.n)
		}
		q := make([]byte, tc.n)
		n, err = ns.ReadAt(q, tc.off)
		if err != nil || n != len(q) || !bytes.Equal(p, q) {
			t.Fatalf("ReadAt(%d, %d): %d %v equal %v", tc.off, tc.n, n, err, bytes.Equal(p, q))
		}
	}
	for _, cmd := range r.qp.commands {
		rw := nvme.RWCmd{SQE: &cmd.sqe}
		if (cmd.sqe.Opcode() == nvme.IORead || cmd.sqe.Opcode() == nvme.IOWrite) && rw.NLB()*512 > 4096 {
			t.Fatalf("command of %d blocks exceeds MaxTransfer", rw.NLB())
		}
	}
}

func TestNamespaceReadPastEnd(t *testing.T) {
	r := newFakeRig(t, 4, 512, 8, 4096, 0)
	for i := range r.qp.disk {
		r.qp.disk[i] = byte(i / 512)
	}
	ns := r.ns
	p := make([]byte, 2048)
	n, err := ns.ReadAt(p, 512*6)
	if n != 1024 || err != io.EOF {
		t.Fatalf("ReadAt across the end: %d %v", n, err)
	}
	if p[0] != 6 || p[1023] != 7 {
		t.Fatalf("wrong data %d %d", p[0], p[1023])
	}
	if n, err := ns.ReadAt(p, 512*8); n != 0 || err != io.EOF {
		t.Fatalf("ReadAt at the end: %d %v", n, err)
	}
	if _, err := ns.WriteAt(p, 512*7); !errors.Is(err, nvme.StatusLBAOutOfRange) {
		t.Fatalf("WriteAt across the end: %v", err)
	}
	if err := ns.WriteZeroes(512*7, 1024); !errors.Is(err, nvme.StatusLBAOutOfRange) {
		t.Fatalf("WriteZeroes across the end: %v", err)
	}
}

func TestNamespaceZeroesDeallocateFlush(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	ns := r.ns
	all := bytes.Repeat([]byte{0x5A}, 64*512)
	if _, err := ns.WriteAt(all, 0); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteZeroes(512*4, 512*20); err != nil {
		t.Fatal(err)
	}
	if err := ns.Deallocate(512*40, 512*10); err != nil {
		t.Fatal(err)
	}
	if err := ns.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := ns.WriteFUA(all[:512], 512*63); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(all))
	if _, err := ns.ReadAt(got, 0); err != nil {
		t.Fatal(err)
	}
	for blk := 0; blk < 64; blk++ {
		want := byte(0x5A)
		if blk >= 4 && blk < 24 || blk >= 40 && blk < 50 {
			want = 0
		}
		if got[blk*512] != want {
			t.Fatalf("block %d = %#x want %#x", blk, got[blk*512], want)
		}
	}
}

func TestNamespaceRangeOpsNeedONCS(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.c.ident.ONCS = 0
	if err := r.ns.WriteZeroes(0, 512); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("WriteZeroes: %v", err)
	}
	if err := r.ns.Deallocate(0, 512); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Deallocate: %v", err)
	}
}

func TestNamespaceErrorReportsBytesBeforeFailure(t *testing.T) {
	// Shrink the fake disk so that the third 4 KiB chunk fails.
	r := newFakeRig(t, 2, 512, 64, 4096, 0)
	r.qp.disk = r.qp.disk[:512*20]
	p := make([]byte, 512*32)
	n, err := r.ns.ReadAt(p, 0)
	if !errors.Is(err, nvme.StatusLBAOutOfRange) {
		t.Fatalf("err %v", err)
	}
	if n != 512*16 {
		t.Fatalf("n = %d, want %d (two whole chunks before the failing one)", n, 512*16)
	}
}

func TestNamespaceConcurrentCallers(t *testing.T) {
	r := newFakeRig(t, 8, 512, 512, 8192, 0)
	ns := r.ns
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			p := bytes.Repeat([]byte{byte(g + 1)}, 512*64)
			off := int64(g) * 512 * 64
			for k := 0; k < 10; k++ {
				if _, err := ns.WriteAt(p, off); err != nil {
					errs <- err
					return
				}
				q := make([]byte, len(p))
				if _, err := ns.ReadAt(q, off); err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(p, q) {
					errs <- errors.New("mismatch")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestNamespaceAfterLossAndClose(t *testing.T) {
	r := newFakeRig(t, 4, 512, 64, 4096, 0)
	r.c.lose(errors.New("test"))
	if _, err := r.ns.ReadAt(make([]byte, 512), 0); !errors.Is(err, ErrControllerLost) {
		t.Fatalf("ReadAt after loss: %v", err)
	}
	r2 := newFakeRig(t, 4, 512, 64, 4096, 0)
	if err := r2.c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.ns.WriteAt(make([]byte, 512), 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("WriteAt after Close: %v", err)
	}
}

func TestNamespaceLargeTransferSpreadsAcrossFreeQueues(t *testing.T) {
	// depth 2 x 4 KiB per queue: a 64 KiB write is 16 commands, more
	// than one queue's pipeline, so all four idle queues take a part.
	r := newFakeRigN(t, 4, 2, 512, 512, 4096, 0)
	p := make([]byte, 64<<10)
	for i := range p {
		p[i] = byte(i * 13)
	}
	if n, err := r.ns.WriteAt(p, 512*8); err != nil || n != len(p) {
		t.Fatalf("WriteAt: %d %v", n, err)
	}
	for k, fqp := range r.qps {
		if fqp.sends != 4 {
			t.Fatalf("queue %d carried %d commands, want 4", k, fqp.sends)
		}
	}
	q := make([]byte, len(p))
	if n, err := r.ns.ReadAt(q, 512*8); err != nil || n != len(q) || !bytes.Equal(p, q) {
		t.Fatalf("ReadAt: %d %v", n, err)
	}
	if !bytes.Equal(r.qp.disk[512*8:512*8+len(p)], p) {
		t.Fatal("disk differs")
	}
	// Nothing is left in any queue's slot table.
	for k, st := range r.c.QueueStats() {
		if st.InFlight != 0 {
			t.Fatalf("queue %d: %d commands in flight after the call", k, st.InFlight)
		}
	}
}

func TestNamespaceSplitErrorCountsFromFirstFailingPart(t *testing.T) {
	r := newFakeRigN(t, 4, 2, 512, 512, 4096, 0)
	for _, fqp := range r.qps {
		fqp.disk = fqp.disk[:512*20]
	}
	n, err := r.ns.WriteAt(make([]byte, 64<<10), 0)
	if !errors.Is(err, nvme.StatusLBAOutOfRange) {
		t.Fatalf("err %v", err)
	}
	if n != 512*16 {
		t.Fatalf("n = %d, want %d", n, 512*16)
	}
}
