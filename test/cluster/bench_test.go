package cluster

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// BenchmarkVolumeCreate creates 1,000 volumes through the API of a 3-node
// in-process cluster (round-robin over the nodes, so two thirds are
// forwarded to the leader; 8 concurrent clients), and reports creates/s
// and the p50/p99 latency of one create.
func BenchmarkVolumeCreate(b *testing.B) {
	const total, workers = 1000, 8
	for i := range b.N {
		ms := startCluster(b, 3)
		lat := make([]time.Duration, total)
		var next atomic.Int64
		var wg sync.WaitGroup
		b.ResetTimer()
		t0 := time.Now()
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := int(next.Add(1)) - 1
					if k >= total {
						return
					}
					m := ms[k%3]
					s := time.Now()
					if _, err := m.c.CreateVolume(ctx(b), api.CreateVolumeRequest{
						Name: fmt.Sprintf("b%d-%04d", i, k), Size: 1 << 20, Node: ms[(k+1)%3].id,
					}); err != nil {
						b.Error(err)
						return
					}
					lat[k] = time.Since(s)
				}
			}()
		}
		wg.Wait()
		el := time.Since(t0)
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(total)/el.Seconds(), "creates/s")
		b.ReportMetric(float64(lat[total/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[total*99/100].Microseconds())/1000, "p99-ms")
		for _, m := range ms {
			m.stop(b)
		}
	}
}

// BenchmarkThousandNamespaces: one node's target serves 1,000 namespaces
// (1,000 volumes through the API, one subsystem, reconciled); reports the
// time from the API calls until a host sees all 1,000, then reads 4 KiB
// from every namespace over one controller.
func BenchmarkThousandNamespaces(b *testing.B) {
	const n = 1000
	const nqn = "nqn.2026-11.io.rdmablk:thousand"
	for range b.N {
		ms := startCluster(b, 1)
		m := ms[0]
		t0 := time.Now()
		if _, err := m.c.CreateSubsystem(ctx(b), api.CreateSubsystemRequest{NQN: nqn, AllowAnyHost: true}); err != nil {
			b.Fatal(err)
		}
		for k := range n {
			name := fmt.Sprintf("ns-%04d", k)
			if _, err := m.c.CreateVolume(ctx(b), api.CreateVolumeRequest{Name: name, Size: 1 << 20}); err != nil {
				b.Fatal(err)
			}
			if _, err := m.c.AddNamespace(ctx(b), nqn, uint32(k+1), name); err != nil {
				b.Fatal(err)
			}
		}
		eventually(b, 120*time.Second, "1000 namespaces in the target", func() bool {
			s, ok := m.tgt.Subsystem(nqn)
			return ok && len(s.Namespaces()) == n
		})
		b.ReportMetric(time.Since(t0).Seconds(), "s-to-serve-1000")
		opts := initiator.Options{Provider: soft.New(soft.Options{}), Logger: quietLogger(), IOQueues: 2, QueueDepth: 32}
		ctrl, err := initiator.Connect(ctx(b), m.dataAddr(), nqn, opts)
		if err != nil {
			b.Fatal(err)
		}
		if got := len(ctrl.Namespaces()); got != n {
			b.Fatalf("host sees %d namespaces", got)
		}
		buf := make([]byte, 4096)
		t1 := time.Now()
		for _, ns := range ctrl.Namespaces() {
			if _, err := ns.ReadAt(buf, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n)/time.Since(t1).Seconds(), "ns-reads/s")
		ctrl.Close()
		m.stop(b)
	}
}
