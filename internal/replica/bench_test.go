package replica

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// benchDone counts completions on a channel without allocating.
type benchDone struct{ ch chan error }

func (d *benchDone) IODone(err error) { d.ch <- err }

// BenchmarkLegSubmitWrite: 4 KiB async writes at queue depth 32 through
// a Leg to an in-process replica (soft provider, mem backend), from a
// registered buffer (zero copy) and from plain memory (copy). allocs/op
// counts the whole process: leg, session, soft provider and target.
func BenchmarkLegSubmitWrite(b *testing.B) {
	for _, fixed := range []bool{true, false} {
		b.Run(map[bool]string{true: "fixed", false: "copy"}[fixed], func(b *testing.B) {
			const qd, bs = 32, 4096
			fabric := soft.NewFabric()
			n := newReplica(b, fabric, mem.New(1024, bs))
			l := openLeg(b, legConfig(fabric, n))
			region := make([]byte, qd*bs)
			if fixed {
				reg, err := l.RegisterFixed(region)
				if err != nil {
					b.Fatal(err)
				}
				defer l.UnregisterFixed(reg)
			}
			d := &benchDone{ch: make(chan error, qd)}
			submit := func(i int) {
				buf := region[(i%qd)*bs : (i%qd+1)*bs]
				if !l.SubmitWrite(buf, uint64(i%1024), 0, d) { // qd < Depth: never full
					b.Fatal("leg refused a write")
				}
			}
			// Warm the session's pools.
			for i := range 2 * qd {
				submit(i)
				if err := <-d.ch; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.SetBytes(bs)
			b.ResetTimer()
			inflight := 0
			for i := 0; i < b.N; i++ {
				if inflight == qd {
					if err := <-d.ch; err != nil {
						b.Fatal(err)
					}
					inflight--
				}
				submit(i)
				inflight++
			}
			for ; inflight > 0; inflight-- {
				if err := <-d.ch; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if fixed && l.Stats().ZeroCopyBytes == 0 {
				b.Fatal("no zero-copy bytes from a registered buffer")
			}
		})
	}
}

var _ blockdev.Completion = (*benchDone)(nil)
