package nbd_test

import (
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
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
	pumpReads(b, c, qd, 4*qd+100, nil) // connection set up, pools warm
	b.SetBytes(4096)
	b.ReportAllocs()
	var r0, r1 syscall.Rusage
	pumpReads(b, c, qd, b.N, func() {
		syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
		b.ResetTimer()
	})
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	reportSwitches(b, &r0, &r1)
}

// reportSwitches reports the process's context switches per operation:
// voluntary ones (a thread blocked: a wake-up was needed) and
// involuntary ones (preempted), a measure of hand-offs that a busy host
// disturbs less than ns/op.
func reportSwitches(b *testing.B, r0, r1 *syscall.Rusage) {
	b.ReportMetric(float64(r1.Nvcsw-r0.Nvcsw)/float64(b.N), "vcsw/op")
	b.ReportMetric(float64(r1.Nivcsw-r0.Nivcsw)/float64(b.N), "ivcsw/op")
}

// pumpReads is nbdtest.Reads of 4 KiB, failing tb on an error.
func pumpReads(tb testing.TB, c net.Conn, qd, n int, start func()) {
	tb.Helper()
	if err := nbdtest.Reads(c, qd, n, 4096, start); err != nil {
		tb.Fatal(err)
	}
}

// TestAsyncReadsAllocateNothing: in steady state a 4 KiB read through
// the async path allocates nothing, server and client together (payload
// buffers are pooled, requests are connection slots, replies reuse one
// vector), at QD 1 and QD 32. (The blocking path allocates one object
// per request: its goroutine.)
func TestAsyncReadsAllocateNothing(t *testing.T) {
	for _, qd := range []int{1, 32} {
		m := newMem(1<<20, 512)
		readsAllocateNothing(t, &asyncMem{memBackend: m, t: t, worker: true}, qd)
	}
}

// readsAllocateNothing fails t when 4 KiB reads at qd through be over a
// socket pair allocate more than one object per 100 reads.
func readsAllocateNothing(t *testing.T, be nbd.Backend, qd int) {
	t.Helper()
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: be}}})
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
