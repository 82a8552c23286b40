package e2e

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// benchSession is a session of 4 queues of depth 32 to an in-process
// target on a memory backend over the soft fabric, or over NVMe/TCP on
// loopback (overTCP).
func benchSession(b *testing.B, overTCP bool) *initiator.Session {
	b.Helper()
	fab := soft.NewFabric()
	tgt, ls := fabricTarget(b, fab, mem.New(1<<15, 512), "bench:4420")
	path := ls[0].Addr()
	if overTCP {
		path = listenPath(b, tgt, fab, true, "", 2).addr
	}
	return openSession(b, soft.New(soft.Options{Fabric: fab}), []string{path}, 4, 32)
}

// forBenchTransports runs f over the soft RDMA fabric and NVMe/TCP.
func forBenchTransports(b *testing.B, f func(b *testing.B, overTCP bool)) {
	b.Run("rdma", func(b *testing.B) { f(b, false) })
	b.Run("tcp", func(b *testing.B) { f(b, true) })
}

// BenchmarkSessionSubmitRead4K: 4 KiB reads through Session.Submit with 64
// requests in flight over 4 queues; allocations per read are reported (0
// expected).
func BenchmarkSessionSubmitRead4K(b *testing.B) { forBenchTransports(b, benchSessionSubmitRead4K) }

func benchSessionSubmitRead4K(b *testing.B, overTCP bool) {
	benchSessionSubmit4K(b, benchSession(b, overTCP), initiator.IORead)
}

// BenchmarkSessionSubmitWrite4K: 4 KiB writes through Session.Submit,
// 64 in flight over 4 queues, over NVMe/TCP on loopback, the capsules
// copied (writev) or sent zero-copy (batches from 4 KiB, loopback
// allowed); allocations per write are reported (0 expected).
func BenchmarkSessionSubmitWrite4K(b *testing.B) {
	for _, zc := range []bool{false, true} {
		name := "copy"
		if zc {
			name = "zero-copy"
		}
		b.Run(name, func(b *testing.B) {
			if zc && !tcpzc.Works() {
				b.Skip("no zero-copy send on this kernel")
			}
			tcpzc.AllowLoopback.Store(zc)
			b.Cleanup(func() { tcpzc.AllowLoopback.Store(false) })
			fab := soft.NewFabric()
			tgt, _ := fabricTarget(b, fab, mem.New(1<<15, 512), "bench:4420")
			path := listenPath(b, tgt, fab, true, "", 2).addr
			min := -1
			if zc {
				min = 4096
			}
			s := openSession(b, soft.New(soft.Options{Fabric: fab}), []string{path}, 4, 32,
				func(o *initiator.SessionOptions) { o.ZeroCopySendMin = min })
			sends := initiator.TCPZeroCopyStats().Sends
			benchSessionSubmit4K(b, s, initiator.IOWrite)
			if now := initiator.TCPZeroCopyStats().Sends; (now != sends) != zc {
				b.Fatalf("zero-copy sends %d, zero copy asked: %v", now-sends, zc)
			}
		})
	}
}

// benchSessionSubmit4K runs b.N 4 KiB op requests through s, 64 in
// flight.
func benchSessionSubmit4K(b *testing.B, s *initiator.Session, op initiator.IOOp) {
	const window = 64
	done := make(chan *initiator.Request, window)
	reqs := make([]initiator.Request, window)
	blocks := s.Size() / 4096
	next := int64(0)
	submit := func(r *initiator.Request) {
		r.Op, r.Off, r.Done = op, (next%blocks)*4096, done
		next++
		if err := s.Submit(r); err != nil {
			b.Fatal(err)
		}
	}
	for i := range reqs {
		reqs[i].Data = make([]byte, 4096)
	}
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		if inFlight < window && inFlight < b.N-i {
			submit(&reqs[inFlight])
			inFlight++
			i--
			continue
		}
		r := <-done
		if r.Err != nil {
			b.Fatal(r.Err)
		}
		if i+inFlight < b.N {
			submit(r)
		} else {
			inFlight--
		}
	}
	for ; inFlight > 0; inFlight-- {
		<-done
	}
}

// BenchmarkSessionReadAt4K: blocking 4 KiB ReadAt from 16×GOMAXPROCS
// goroutines sharing the session's queues.
func BenchmarkSessionReadAt4K(b *testing.B) { forBenchTransports(b, benchSessionReadAt4K) }

func benchSessionReadAt4K(b *testing.B, overTCP bool) {
	s := benchSession(b, overTCP)
	blocks := s.Size() / 4096
	b.ReportAllocs()
	b.SetBytes(4096)
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 4096)
		k := int64(0)
		for pb.Next() {
			if _, err := s.ReadAt(buf, (k%blocks)*4096); err != nil {
				b.Error(err)
				return
			}
			k += 7
		}
	})
}
