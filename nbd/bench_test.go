package nbd_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
)

// socketPair returns the two ends of a unix stream socket pair.
func socketPair(b *testing.B) (net.Conn, net.Conn) {
	b.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	var cs [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "nbd-bench")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		cs[i] = c
	}
	return cs[0], cs[1]
}

// BenchmarkServerRead4K measures 4 KiB reads through the transmission
// phase over an in-process socket pair, with a client that keeps qd
// requests in flight and allocates nothing, for
//   - blocking: the Backend methods, on a goroutine per request;
//   - async: an AsyncBackend completing from a goroutine of its own per
//     connection (as the initiator adapter does), replies written by the
//     completing goroutine;
//   - async-writer: the same with a reply writer goroutine per
//     connection (one more hand-off per batch).
//
// allocs/op counts every goroutine of the process (client included).
func BenchmarkServerRead4K(b *testing.B) {
	for _, qd := range []int{1, 32} {
		for _, mode := range []string{"blocking", "async", "async-writer"} {
			b.Run(mode+"/qd"+strconv.Itoa(qd), func(b *testing.B) {
				m := newMem(1<<20, 512)
				var be nbd.Backend = m
				if mode != "blocking" {
					be = &asyncMem{memBackend: m, t: b, worker: true}
				}
				opts := nbd.Options{Exports: []*nbd.Export{{Backend: be}}}
				if mode == "async-writer" {
					opts = nbd.WithWriterGoroutine(opts)
				}
				s, err := nbd.NewServer(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				cl, sv := socketPair(b)
				done := make(chan error, 1)
				go func() { done <- s.ServeTransmission(sv, "") }()
				benchReads(b, cl, qd)
				cl.Close()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// benchReads runs b.N 4 KiB reads on c with qd in flight.
func benchReads(b *testing.B, c net.Conn, qd int) {
	const size = 4096
	reqs := make([]byte, 28*qd)
	var next uint64
	fill := func(n int) []byte {
		p := reqs[:28*n]
		for i := range n {
			h := p[28*i:]
			binary.BigEndian.PutUint32(h[0:], 0x25609513)
			binary.BigEndian.PutUint64(h[8:], next)
			binary.BigEndian.PutUint64(h[16:], next%256*size)
			binary.BigEndian.PutUint32(h[24:], size)
			next++
		}
		return p
	}
	br := bufio.NewReaderSize(c, 256<<10)
	var rep [16 + size]byte
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	sent := min(qd, b.N)
	if _, err := c.Write(fill(sent)); err != nil {
		b.Fatal(err)
	}
	for got := 0; got < b.N; {
		n := 0
		for {
			if _, err := io.ReadFull(br, rep[:]); err != nil {
				b.Fatal(err)
			}
			if binary.BigEndian.Uint32(rep[4:]) != 0 {
				b.Fatalf("errno %d", binary.BigEndian.Uint32(rep[4:]))
			}
			n++
			if br.Buffered() < len(rep) {
				break
			}
		}
		got += n
		if more := min(n, b.N-sent); more > 0 {
			if _, err := c.Write(fill(more)); err != nil {
				b.Fatal(err)
			}
			sent += more
		}
	}
	b.StopTimer()
}
