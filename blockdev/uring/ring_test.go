//go:build linux

package uring

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"
)

func TestSizes(t *testing.T) {
	if s := unsafe.Sizeof(SQE{}); s != 64 {
		t.Fatalf("SQE is %d bytes", s)
	}
	if s := unsafe.Sizeof(CQE{}); s != 16 {
		t.Fatalf("CQE is %d bytes", s)
	}
	if s := unsafe.Sizeof(params{}); s != 120 {
		t.Fatalf("params is %d bytes", s)
	}
}

func newRing(t *testing.T, n int) *Ring {
	t.Helper()
	r, err := New(n)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// TestReadWrite writes and reads back a file through the ring, plain and
// with fixed buffers, and checks ErrFull.
func TestReadWrite(t *testing.T) {
	r := newRing(t, 4)
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int32(f.Fd())
	src := bytes.Repeat([]byte("0123456789abcdef"), 512)
	dst := make([]byte, len(src))
	cqes := make([]CQE, 8)
	run := func(e SQE) CQE {
		t.Helper()
		if err := r.Prepare(&e); err != nil {
			t.Fatal(err)
		}
		if n, err := r.Submit(); n != 1 || err != nil {
			t.Fatalf("Submit: %d %v", n, err)
		}
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := r.Reap(cqes); n != 1 {
			t.Fatalf("Reap: %d", n)
		}
		return cqes[0]
	}
	if c := run(SQE{Opcode: OpWrite, FD: fd, Addr: addr(src), Len: uint32(len(src)), UserData: 7}); c.Res != int32(len(src)) || c.UserData != 7 {
		t.Fatalf("write: %+v", c)
	}
	if c := run(SQE{Opcode: OpRead, FD: fd, Addr: addr(dst), Len: uint32(len(dst)), UserData: 8}); c.Res != int32(len(dst)) || c.UserData != 8 {
		t.Fatalf("read: %+v", c)
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("data differs")
	}
	clear(dst)
	if err := r.RegisterBuffers([][]byte{dst}); err != nil {
		t.Fatal(err)
	}
	if c := run(SQE{Opcode: OpReadFixed, FD: fd, Addr: addr(dst), Len: uint32(len(dst)), BufIndex: 0}); c.Res != int32(len(dst)) {
		t.Fatalf("read fixed: %+v", c)
	}
	if !bytes.Equal(src, dst) {
		t.Fatal("fixed read data differs")
	}
	if err := r.UnregisterBuffers(); err != nil {
		t.Fatal(err)
	}
	for range r.Entries() {
		if err := r.Prepare(&SQE{Opcode: OpNop}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Prepare(&SQE{Opcode: OpNop}); !errors.Is(err, ErrFull) {
		t.Fatalf("Prepare past the ring: %v", err)
	}
	if n, err := r.Submit(); n != r.Entries() || err != nil {
		t.Fatalf("Submit: %d %v", n, err)
	}
	got := 0
	for got < r.Entries() {
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		got += r.Reap(cqes)
	}
}
