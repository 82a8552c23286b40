package nbd

import (
	"bytes"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSockConnWriteBuffersResumes: writeBuffers hands over every byte, in
// order, of more buffers than one writev takes and more data than the
// socket buffers hold — short writes and EAGAIN (waited for in poll)
// resume where they stopped; empty buffers are skipped.
func TestSockConnWriteBuffersResumes(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = unix.SetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF, 4096)
	c, err := newSockConn(fds[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := os.NewFile(uintptr(fds[1]), "peer")
	defer peer.Close()
	var bufs [][]byte
	var want []byte
	for i := range 3000 { // > nbsys.MaxIOV buffers, ~3 MiB
		b := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 1+i%700)
		if i%97 == 0 {
			b = nil
		}
		bufs = append(bufs, b)
		want = append(want, b...)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(peer, int64(len(want))))
		got <- b
	}()
	n, err := c.writeBuffers(bufs)
	if err != nil || n != int64(len(want)) {
		t.Fatalf("writeBuffers: %d, %v; want %d", n, err, len(want))
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("peer read %d bytes, not the %d written in order", len(b), len(want))
	}
}
