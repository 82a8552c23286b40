package nbd_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
)

// socketPair returns the two ends of a unix stream socket pair.
func socketPair(b testing.TB) (net.Conn, net.Conn) {
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
	b.SetBytes(4096)
	b.ReportAllocs()
	pumpReads(b, c, qd, b.N, b.ResetTimer)
	b.StopTimer()
}

// pumpReads sends n 4 KiB reads on c, keeping qd in flight, and reads
// their replies. It allocates nothing after its first lines; start is
// called when it is ready.
func pumpReads(tb testing.TB, c net.Conn, qd, n int, start func()) {
	const size = 4096
	reqs := make([]byte, 28*qd)
	var next uint64
	fill := func(k int) []byte {
		p := reqs[:28*k]
		for i := range k {
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
	rep := make([]byte, 16+size)
	start()
	sent := min(qd, n)
	if _, err := c.Write(fill(sent)); err != nil {
		tb.Fatal(err)
	}
	for got := 0; got < n; {
		k := 0
		for {
			if _, err := io.ReadFull(br, rep); err != nil {
				tb.Fatal(err)
			}
			if e := binary.BigEndian.Uint32(rep[4:]); e != 0 {
				tb.Fatalf("errno %d", e)
			}
			k++
			if br.Buffered() < len(rep) {
				break
			}
		}
		got += k
		if more := min(k, n-sent); more > 0 {
			if _, err := c.Write(fill(more)); err != nil {
				tb.Fatal(err)
			}
			sent += more
		}
	}
}

// TestAsyncReadsAllocateNothing: in steady state a 4 KiB read through
// the async path allocates nothing, server and client together (payload
// buffers are pooled, requests are connection slots, replies reuse one
// vector), at QD 1 and QD 32. (The blocking path allocates one object
// per request: its goroutine.)
func TestAsyncReadsAllocateNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, qd := range []int{1, 32} {
		m := newMem(1<<20, 512)
		s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: &asyncMem{memBackend: m, t: t, worker: true}}}})
		if err != nil {
			t.Fatal(err)
		}
		cl, sv := socketPair(t)
		done := make(chan error, 1)
		go func() { done <- s.ServeTransmission(sv, "") }()
		pumpReads(t, cl, qd, 2000, func() {}) // warm the pools
		const n = 5000
		var before, after runtime.MemStats
		// No GC in the window: it would empty the buffer pools, and
		// their refill is not a per-request allocation.
		gc := debug.SetGCPercent(-1)
		pumpReads(t, cl, qd, n, func() { runtime.ReadMemStats(&before) })
		runtime.ReadMemStats(&after)
		debug.SetGCPercent(gc)
		cl.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		s.Close()
		if allocs := after.Mallocs - before.Mallocs; allocs > n/100 {
			t.Errorf("QD %d: %d allocations for %d reads (GCs %d→%d)", qd, allocs, n, before.NumGC, after.NumGC)
		}
	}
}
