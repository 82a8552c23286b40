package rdma

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// BenchmarkRead4KNull measures end-to-end 4 KiB reads from a raw verbs
// host through the transport and the real target core into a null
// backend, over the in-process soft fabric, with 32 commands outstanding.
// allocs/op covers everything in the process (soft provider, core, host);
// TestIOPathAllocatesNothing proves the transport's own share is zero.
func BenchmarkRead4KNull(b *testing.B) { benchRead4KNull(b, false) }

// BenchmarkRead4KNullLockedPollers is BenchmarkRead4KNull with the poll
// groups locked to OS threads (Config.LockPollerThreads).
func BenchmarkRead4KNullLockedPollers(b *testing.B) { benchRead4KNull(b, true) }

func benchRead4KNull(b *testing.B, locked bool) {
	tgt := newRealTarget(b, true)
	g := newRig(b, rigOpts{realCore: true, cfg: Config{Target: tgt, PortID: 1, LockPollerThreads: &locked}})
	const depth = 32
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: depth, dataSize: depth * 4096})
	sqes := make([][]byte, depth)
	for i := range sqes {
		s := io.ioSQE(nvme.IORead, uint16(i), uint64(i)*4096, 4096, i*4096, 0)
		sqes[i] = capsule(&s, nil)
	}
	inflight := 0
	b.SetBytes(4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if inflight == depth {
			rsp, err := io.response(g.ctx)
			if err != nil || !rsp.cqe.Status().OK() {
				b.Fatalf("%v %v", err, rsp.cqe.Status())
			}
			inflight--
		}
		if err := io.send(sqes[i%depth]); err != nil {
			b.Fatal(err)
		}
		inflight++
	}
	for ; inflight > 0; inflight-- {
		if _, err := io.response(g.ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
}
