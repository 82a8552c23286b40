package rdma

import (
	"fmt"
	"testing"
)

// BenchmarkIOQueueConnect measures one I/O queue's connect: RDMA CM
// connect request, queue setup (PD, CQ, QP, registration), accept and the
// Fabrics Connect, at the old default MDTS (128 KiB) and nvmet's (1 MiB),
// at the Linux host's queue depth (128). The queue is closed after each
// connect (outside the timer's interest: teardown is asynchronous).
func BenchmarkIOQueueConnect(b *testing.B) {
	for _, mdts := range []int{128 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("mdts=%dK", mdts>>10), func(b *testing.B) {
			g := newRig(b, rigOpts{cfg: Config{MaxDataTransfer: mdts}})
			// Registered bytes of one connected queue (what a device
			// pins per queue).
			h := g.connectQueue(rawOpts{qid: 1, depth: 128, dataSize: 4096}, testSubNQN, testHostNQN)
			reg := g.l.Stats().RegisteredBytes
			h.close()
			g.waitQueues(0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h := g.connectQueue(rawOpts{qid: 1, depth: 128, dataSize: 4096}, testSubNQN, testHostNQN)
				h.close()
			}
			b.StopTimer()
			b.ReportMetric(float64(reg)/(1<<20), "reg-MiB/queue")
		})
	}
}
