//go:build linux

package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSparseTable installs a buffer at an index of a sparse table, reads
// into a slice inside it with OpReadFixed and writes from it with
// OpWriteFixed, then empties the entry: a fixed op naming it then fails,
// and indices outside the table are refused.
func TestSparseTable(t *testing.T) {
	r := newRing(t, 4)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int32(f.Fd())
	src := bytes.Repeat([]byte("fixed-buffers..."), 256) // 4 KiB
	if _, err := f.WriteAt(src, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateBuffer(0, src); !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("UpdateBuffer without a table: %v, want ENXIO", err)
	}
	if err := r.RegisterSparse(8); err != nil {
		if errors.Is(err, syscall.EINVAL) {
			t.Skipf("kernel without sparse buffer tables: %v", err)
		}
		t.Fatal(err)
	}
	region := make([]byte, 3*len(src))
	if err := r.UpdateBuffer(5, region); err != nil {
		t.Fatal(err)
	}
	if err := r.UpdateBuffer(8, region); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("UpdateBuffer past the table: %v, want EINVAL", err)
	}
	cqes := make([]CQE, 4)
	run := func(e SQE) CQE {
		t.Helper()
		if err := r.Prepare(&e); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Submit(); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := r.Reap(cqes); n != 1 {
			t.Fatalf("Reap: %d", n)
		}
		return cqes[0]
	}
	mid := region[len(src) : 2*len(src)] // a buffer inside the entry
	if c := run(SQE{Opcode: OpReadFixed, FD: fd, Addr: addr(mid), Len: uint32(len(mid)), BufIndex: 5}); c.Res != int32(len(mid)) {
		t.Fatalf("read fixed: %+v", c)
	}
	if !bytes.Equal(mid, src) {
		t.Fatal("fixed read data differs")
	}
	if c := run(SQE{Opcode: OpWriteFixed, FD: fd, Off: uint64(len(src)), Addr: addr(mid), Len: uint32(len(mid)), BufIndex: 5}); c.Res != int32(len(mid)) {
		t.Fatalf("write fixed: %+v", c)
	}
	got := make([]byte, len(src))
	if _, err := f.ReadAt(got, int64(len(src))); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("fixed write data differs (%v)", err)
	}
	// An empty entry and an entry that does not hold the buffer fail.
	if c := run(SQE{Opcode: OpReadFixed, FD: fd, Addr: addr(mid), Len: uint32(len(mid)), BufIndex: 4}); c.Res >= 0 {
		t.Fatalf("read fixed on an empty entry: %+v", c)
	}
	if err := r.UpdateBuffer(5, nil); err != nil {
		t.Fatal(err)
	}
	if c := run(SQE{Opcode: OpReadFixed, FD: fd, Addr: addr(mid), Len: uint32(len(mid)), BufIndex: 5}); c.Res >= 0 {
		t.Fatalf("read fixed on an emptied entry: %+v", c)
	}
}
