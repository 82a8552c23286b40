package replica

import (
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// benchDone counts completions on a channel without allocating.
type benchDone struct{ ch chan error }

func (d *benchDone) IODone(err error) { d.ch <- err }

// runAsyncWrites keeps qd 4 KiB async writes from region in flight on a,
// for b.N writes (a: a Leg or a mirror).
func runAsyncWrites(b *testing.B, a blockdev.Async, region []byte, qd, bs int, blocks uint64) {
	d := &benchDone{ch: make(chan error, qd)}
	submit := func(i int) {
		buf := region[(i%qd)*bs : (i%qd+1)*bs]
		if !a.SubmitWrite(buf, uint64(i)%blocks, 0, d) { // qd < Depth: never full
			b.Fatal("async write refused")
		}
	}
	for i := range 2 * qd { // warm the pools
		submit(i)
		if err := <-d.ch; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(bs))
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
}

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
			runAsyncWrites(b, l, region, qd, bs, 1024)
			if fixed && l.Stats().ZeroCopyBytes == 0 {
				b.Fatal("no zero-copy bytes from a registered buffer")
			}
		})
	}
}

// BenchmarkMirrorLegSubmitWrite: the same load through a mirror over a
// local mem leg and one Leg (the replicated write path on an owner).
func BenchmarkMirrorLegSubmitWrite(b *testing.B) {
	const qd, bs = 32, 4096
	fabric := soft.NewFabric()
	n := newReplica(b, fabric, mem.New(1024, bs))
	l := openLeg(b, legConfig(fabric, n))
	m, err := mirror.New(mirror.Config{LocalName: "node1", Local: mem.New(1024, bs), Membership: newMembership()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.AddLeg(legName, l, mirror.InSync); err != nil {
		b.Fatal(err)
	}
	region := make([]byte, qd*bs)
	runAsyncWrites(b, m.Backend().(blockdev.Async), region, qd, bs, 1024)
}

// BenchmarkMirrorLegSubmitWriteFixed is the replicated write path as
// rdmablkd runs it on an owner: the target's registered data buffers
// registered with the mirror (blockdev.FixedBuffers), so each 4 KiB write
// goes to the local file leg (io_uring, O_DIRECT, WRITE_FIXED) and, from
// the same memory, to the Leg zero copy (in-process replica, soft
// provider, mem backend); QD32. allocs/op counts the whole process.
func BenchmarkMirrorLegSubmitWriteFixed(b *testing.B) {
	fabric := soft.NewFabric()
	n := newReplica(b, fabric, mem.New(1024, 4096))
	l := openLeg(b, legConfig(fabric, n))
	runFixedMirrorWrites(b, l)
	if l.Stats().ZeroCopyBytes == 0 {
		b.Fatal("the replica leg sent no zero-copy bytes")
	}
}

// runFixedMirrorWrites runs QD32 4 KiB writes through a mirror over a
// local file leg and l, from buffers registered with the mirror, for b.N
// writes (skipped where the file backend has no fixed buffers).
func runFixedMirrorWrites(b *testing.B, l *Leg) {
	const qd, bs = 32, 4096
	local, err := file.Open(filepath.Join(b.TempDir(), "local.img"), file.Options{Size: 1024 * bs, BlockSize: bs})
	if err != nil {
		b.Fatal(err)
	}
	m, err := mirror.New(mirror.Config{LocalName: "node1", Local: local, Membership: newMembership()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if err := m.AddLeg(legName, l, mirror.InSync); err != nil {
		b.Fatal(err)
	}
	fb, ok := m.Backend().(blockdev.FixedBuffers)
	if !ok {
		b.Skip("the file backend offers no fixed buffers here (no io_uring)")
	}
	region := file.AlignedBuffer(qd*bs, bs)
	reg, err := fb.RegisterFixed(region)
	if err != nil {
		b.Skip(err)
	}
	defer fb.UnregisterFixed(reg)
	runAsyncWrites(b, fixedAsync{fb, reg}, region, qd, bs, 1024)
}

// fixedAsync submits writes with SubmitWriteFixed on reg.
type fixedAsync struct {
	blockdev.FixedBuffers
	reg blockdev.FixedRegion
}

func (f fixedAsync) SubmitWrite(buf []byte, lba uint64, flags blockdev.WriteFlags, done blockdev.Completion) bool {
	return f.SubmitWriteFixed(buf, lba, flags, f.reg, done)
}

// BenchmarkMirrorLegSubmitWriteTCP is BenchmarkMirrorLegSubmitWriteFixed
// with the leg over NVMe/TCP, as rdmablkd's legs run by default (auto
// takes NVMe/TCP where the RDMA device is Soft-RoCE): the local file leg
// from the registered buffers, the Leg sending each write's data from the
// same memory, copied into the socket (copy) or zero-copy from 4 KiB as
// the legs' default (zerocopy; on loopback only because AllowLoopback is
// set). allocs/op counts the whole process, replica target included.
func BenchmarkMirrorLegSubmitWriteTCP(b *testing.B) {
	for _, zc := range []bool{false, true} {
		b.Run(map[bool]string{false: "copy", true: "zerocopy"}[zc], func(b *testing.B) {
			if zc {
				if !tcpzc.Works() {
					b.Skip("no zero-copy send on this kernel")
				}
				tcpzc.AllowLoopback.Store(true)
				defer tcpzc.AllowLoopback.Store(false)
			}
			fabric := soft.NewFabric()
			n := newReplica(b, fabric, mem.New(1024, 4096))
			cfg := legConfig(fabric, n)
			cfg.Paths = []string{n.listenTCP(b)}
			if zc {
				cfg.Options.ZeroCopySendMin = 4096
			}
			l := openLeg(b, cfg)
			zc0 := initiator.TCPZeroCopyStats().Sends
			runFixedMirrorWrites(b, l)
			if st := l.Stats(); st.CopiedBytes != 0 || st.ZeroCopyBytes == 0 {
				b.Fatalf("leg copied %d bytes into pool buffers, sent %d from the caller's", st.CopiedBytes, st.ZeroCopyBytes)
			}
			if zc && initiator.TCPZeroCopyStats().Sends == zc0 {
				b.Fatal("no zero-copy send")
			}
		})
	}
}
