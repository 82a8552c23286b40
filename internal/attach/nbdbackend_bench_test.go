package attach

import (
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
)

// BenchmarkNBDSessionRead4K: 4 KiB reads from an NBD client over an
// in-process socket pair through the NBD server into an initiator
// Session (soft provider, mem namespace, 2 queues of depth 32), with the
// Session as a blocking backend (a goroutine and a wait per request) and
// as the attachment's async backend (Session.Submit from the reader).
// allocs/op counts the whole process: client, server, initiator, soft
// provider and target.
func BenchmarkNBDSessionRead4K(b *testing.B) {
	sess := nbdSession(b, 2, 32)
	for _, qd := range []int{1, 32} {
		for _, mode := range []string{"blocking", "async"} {
			b.Run(mode+"/qd"+strconv.Itoa(qd), func(b *testing.B) {
				var be nbd.Backend = sess
				if mode == "async" {
					be = newNBDBackend(sess)
				}
				s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: be}}})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				cl, sv := socketPair(b)
				done := make(chan error, 1)
				go func() { done <- s.ServeTransmission(sv, "") }()
				if err := nbdtest.Reads(cl, qd, 4*qd+100, 4096, nil); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(4096)
				b.ReportAllocs()
				var r0, r1 syscall.Rusage
				if err := nbdtest.Reads(cl, qd, b.N, 4096, func() {
					syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
					b.ResetTimer()
				}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
				// Voluntary context switches: a thread blocked and had to be woken.
				b.ReportMetric(float64(r1.Nvcsw-r0.Nvcsw)/float64(b.N), "vcsw/op")
				cl.Close()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

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
