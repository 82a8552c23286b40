package nbsys

import (
	"bytes"
	"syscall"
	"testing"
	"unsafe"
)

func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(p[0]); syscall.Close(p[1]) })
	return p[0], p[1]
}

func iov(b []byte) syscall.Iovec {
	v := syscall.Iovec{Base: unsafe.SliceData(b)}
	v.SetLen(len(b))
	return v
}

func TestReadWritev(t *testing.T) {
	r, w := pipe(t)
	buf := make([]byte, 64)
	if n, e := Read(uintptr(r), buf); e != syscall.EAGAIN || n != 0 {
		t.Fatalf("read of an empty pipe: %d, %v; want 0, EAGAIN", n, e)
	}
	if n, e := Write(uintptr(w), []byte("<")); e != 0 || n != 1 {
		t.Fatalf("write: %d, %v", n, e)
	}
	if n, e := Read(uintptr(r), buf); e != 0 || string(buf[:n]) != "<" {
		t.Fatalf("read: %q, %v", buf[:n], e)
	}
	a, b := []byte("hello, "), []byte("world")
	if n, e := Writev(uintptr(w), []syscall.Iovec{iov(a), iov(b)}); e != 0 || n != len(a)+len(b) {
		t.Fatalf("writev: %d, %v", n, e)
	}
	n, e := Read(uintptr(r), buf)
	if e != 0 || !bytes.Equal(buf[:n], []byte("hello, world")) {
		t.Fatalf("read: %q, %v", buf[:n], e)
	}
	syscall.Close(w)
	if n, e := Read(uintptr(r), buf); e != 0 || n != 0 {
		t.Fatalf("read after the writer closed: %d, %v; want 0 (end of file)", n, e)
	}
}

// A full pipe takes part of a write, then nothing: EAGAIN, never a block.
func TestWritevFull(t *testing.T) {
	r, w := pipe(t)
	_ = r
	big := make([]byte, 1<<20)
	total := 0
	for {
		n, e := Writev(uintptr(w), []syscall.Iovec{iov(big)})
		if e == syscall.EAGAIN {
			break
		}
		if e != 0 || n == 0 {
			t.Fatalf("writev: %d, %v", n, e)
		}
		total += n
		if total > 64<<20 {
			t.Fatal("a pipe took 64 MiB without filling up")
		}
	}
	if total == 0 {
		t.Fatal("the pipe took nothing before EAGAIN")
	}
}
