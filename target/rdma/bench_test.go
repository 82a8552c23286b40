package rdma

import (
	"runtime"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// BenchmarkRead4KNull measures end-to-end 4 KiB reads from a raw verbs
// host through the transport and the real target core into a null
// backend, over the in-process soft fabric, with 32 commands outstanding.
// allocs/op covers everything in the process (soft provider, core, host);
// TestIOPathAllocatesNothing proves the transport's own share is zero.
func BenchmarkRead4KNull(b *testing.B) { benchRead4KNull(b, false, "", 32) }

// BenchmarkRead4KNullLockedPollers is BenchmarkRead4KNull with the poll
// groups locked to OS threads (Config.LockPollerThreads).
func BenchmarkRead4KNullLockedPollers(b *testing.B) { benchRead4KNull(b, true, "", 32) }

// BenchmarkRead4KNullChannelWait is BenchmarkRead4KNull with the poll
// groups sleeping on their bell channel (Config.PollWait "channel").
func BenchmarkRead4KNullChannelWait(b *testing.B) {
	benchRead4KNull(b, false, PollWaitChannel, 32)
}

// BenchmarkRead4KNullQD1 and BenchmarkRead4KNullQD1ChannelWait: one
// command at a time, so every command finds its poll group asleep (after
// its spin budget) — the per-wake-up cost of the two ways to sleep.
func BenchmarkRead4KNullQD1(b *testing.B) { benchRead4KNull(b, false, PollWaitEpoll, 1) }
func BenchmarkRead4KNullQD1ChannelWait(b *testing.B) {
	benchRead4KNull(b, false, PollWaitChannel, 1)
}

// BenchmarkRead4KNullIdleNeighbours and …Quiet: BenchmarkRead4KNull in
// one poll group that also owns 32 idle controllers (64 idle queues, as
// on a target with many connected hosts of which few are busy), with
// quiet queues off and on (Config.PollQuietAfter 64): what idle
// neighbours cost a busy group per command, and the group's empty passes
// per command (spins/op).
func BenchmarkRead4KNullIdleNeighbours(b *testing.B) {
	benchRead4KNullWith(b, Config{PollGroups: 1}, 32, 32)
}
func BenchmarkRead4KNullIdleNeighboursQuiet(b *testing.B) {
	benchRead4KNullWith(b, Config{PollGroups: 1, PollQuietAfter: 64}, 32, 32)
}

func benchRead4KNull(b *testing.B, locked bool, wait string, depth int) {
	benchRead4KNullWith(b, Config{LockPollerThreads: &locked, PollWait: wait}, depth, 0)
}

// benchRead4KNullWith runs the 4 KiB null reads at depth on a target
// configured by cfg (Target and PortID filled in) whose poll groups also
// own idle controllers, each an admin and an I/O queue.
func benchRead4KNullWith(b *testing.B, cfg Config, depth, idle int) {
	// An epoll group keeps a P for its raw waits (nbsys.ReserveP); set
	// GOMAXPROCS back once the rig, registered after this, is gone.
	procs := runtime.GOMAXPROCS(0)
	b.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	cfg.Target, cfg.PortID = newRealTarget(b, true), 1
	g := newRig(b, rigOpts{realCore: true, cfg: cfg})
	for range idle {
		g.enabledIOQueue(rawOpts{qid: 1, depth: 32, dataSize: 4096})
	}
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: max(depth, 2), dataSize: depth * 4096}) // a queue has ≥ 2 entries
	spins0 := g.l.Stats().Spins
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
	b.ReportMetric(float64(g.l.Stats().Spins-spins0)/float64(b.N), "spins/op")
}
