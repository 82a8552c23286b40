package soft

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestPipeStream(t *testing.T) {
	a, b := newMemConnPair("a", "b")
	// More than the ring holds, in odd-sized writes, read in odd-sized
	// reads: exercises wrap-around and blocking on both ends.
	src := make([]byte, 3*pipeCapacity+12345)
	for i := range src {
		src[i] = byte(i * 31)
	}
	errc := make(chan error, 1)
	go func() {
		for off := 0; off < len(src); {
			n := min(7777, len(src)-off)
			if _, err := a.Write(src[off : off+n]); err != nil {
				errc <- err
				return
			}
			off += n
		}
		errc <- a.CloseWrite()
	}()
	got, err := io.ReadAll(readerFunc(func(p []byte) (int, error) { return b.Read(p[:min(len(p), 5003)]) }))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("stream differs (%d of %d bytes)", len(got), len(src))
	}
	// The other direction still works after the half-close.
	if _, err := b.Write([]byte("back")); err != nil {
		t.Fatalf("write back: %v", err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(a, buf); err != nil || string(buf) != "back" {
		t.Fatalf("read back %q: %v", buf, err)
	}
	if a.LocalAddr().String() != "a" || b.RemoteAddr().String() != "a" || a.SetDeadline(time.Time{}) == nil {
		t.Fatalf("addresses or deadlines")
	}
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }

func TestPipeCloseUnblocks(t *testing.T) {
	a, b := newMemConnPair("a", "b")
	if _, err := a.Write(make([]byte, pipeCapacity)); err != nil { // fills the ring
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := a.Write([]byte{1}) // blocks: nobody reads
		errc <- err
	}()
	readc := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1)) // blocks: nothing to read
		readc <- err
	}()
	a.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("blocked write after Close: %v", err)
	}
	if err := <-readc; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("blocked read after Close: %v", err)
	}
	// The peer drains what was written, then sees EOF; its writes fail.
	n, err := io.Copy(io.Discard, b)
	if err != nil || n != pipeCapacity {
		t.Fatalf("peer drained %d bytes: %v", n, err)
	}
	if _, err := b.Write([]byte{1}); err == nil {
		t.Fatalf("write to a closed peer succeeded")
	}
}

func TestPipeCut(t *testing.T) {
	a, b := newMemConnPair("a", "b")
	if _, err := a.Write([]byte("buffered")); err != nil {
		t.Fatal(err)
	}
	a.cut()
	if _, err := b.Read(make([]byte, 8)); !errors.Is(err, errReset) {
		t.Fatalf("read after cut: %v (buffered bytes must be lost)", err)
	}
	if _, err := a.Write([]byte{1}); !errors.Is(err, errReset) {
		t.Fatalf("write after cut: %v", err)
	}
}
