package tcppdu

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// ReadFull gives io.ReadFull's results whether the buffer holds all of b,
// part of it or none, and Buffered shows without consuming.
func TestReadFullBuffered(t *testing.T) {
	src := make([]byte, 100)
	for i := range src {
		src[i] = byte(i)
	}
	// One byte per source read: every split between buffer and source.
	r := bufio.NewReaderSize(iotest.OneByteReader(bytes.NewReader(src)), 16)
	var got []byte
	for _, n := range []int{0, 3, 1, 8, 16, 20, 0, 2, 50} {
		if n == 8 {
			if p := Buffered(r); len(p) > 0 && p[0] != byte(len(got)) {
				t.Fatalf("Buffered starts at %d, want %d", p[0], len(got))
			}
		}
		b := make([]byte, n)
		if err := ReadFull(r, b); err != nil {
			t.Fatalf("ReadFull(%d) after %d bytes: %v", n, len(got), err)
		}
		got = append(got, b...)
	}
	if !bytes.Equal(got, src) {
		t.Fatalf("read %v", got)
	}
	if err := ReadFull(r, make([]byte, 1)); err != io.EOF {
		t.Fatalf("at the end: %v, want EOF", err)
	}
	r = bufio.NewReader(bytes.NewReader(src[:5]))
	if err := ReadFull(r, make([]byte, 6)); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("short: %v, want ErrUnexpectedEOF", err)
	}
}

// HeaderRest completes a header from the peeked bytes when they hold it
// all, and otherwise leaves the reader just past the common header.
func TestHeaderRest(t *testing.T) {
	src := make([]byte, 40)
	for i := range src {
		src[i] = byte(i)
	}
	for _, bufSize := range []int{16, 64} { // 16: bufio's minimum, less than the header
		r := bufio.NewReaderSize(bytes.NewReader(src), bufSize)
		if _, err := r.Peek(1); err != nil {
			t.Fatal(err)
		}
		p := Buffered(r)
		h := make([]byte, 24)
		copy(h[:CommonHeaderSize], p)
		if !HeaderRest(r, p, h) {
			if err := ReadFull(r, h[CommonHeaderSize:]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(h, src[:24]) {
			t.Fatalf("buffer %d: header %v", bufSize, h)
		}
		if b, err := r.ReadByte(); err != nil || b != 24 {
			t.Fatalf("buffer %d: next byte %d %v, want 24", bufSize, b, err)
		}
	}
}
