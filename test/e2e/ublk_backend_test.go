//go:build linux

package e2e

import (
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/internal/attach/ublkback"
	"github.com/rdmablk/rdmablk/ublk"
	"github.com/rdmablk/rdmablk/ublk/ublktest"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestUblkBackendContract runs the ublk.Backend contract suite against
// the initiator adapter, over a session to an in-process target on the
// soft provider (both profiles): geometry from Identify (queues, depth,
// MDTS, ONCS discard/write zeroes, VWC flush/FUA), every op end to end.
func TestUblkBackendContract(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			fab := soft.NewFabric()
			_, ls := fabricTarget(t, fab, mem.New(4096, 512), "ublk:4420")
			s := openSession(t, soft.New(soft.Options{Profile: pr.p, Fabric: fab}), []string{ls[0].Addr()}, 2, 8)
			b, err := ublkback.New(s)
			if err != nil {
				t.Fatal(err)
			}
			g := b.Geometry()
			if g.Queues != 2 || g.Depth != 8 || g.LogicalBlockSize != 512 || g.Blocks != 4096 ||
				g.MaxDiscardBlocks == 0 || g.MaxWriteZeroesBlocks != 65536 || !g.VolatileCache || !g.FUA {
				t.Fatalf("geometry %+v", g)
			}
			ublktest.RunBackendSuite(t, b)
		})
	}
}

// TestUblkBackendErrno: a request the target fails (a read past the end
// of the namespace, which ublk's own checks would have stopped) completes
// with the errno the kernel's NVMe host gives LBA Out of Range.
func TestUblkBackendErrno(t *testing.T) {
	fab := soft.NewFabric()
	_, ls := fabricTarget(t, fab, mem.New(64, 512), "ublkerr:4420")
	s := openSession(t, soft.New(soft.Options{Fabric: fab}), []string{ls[0].Addr()}, 1, 4)
	b, err := ublkback.New(s)
	if err != nil {
		t.Fatal(err)
	}
	c := make(chanCompleter, 4)
	q, err := b.OpenQueue(0, 4, c)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	buf := q.Buffer(1)
	q.Submit(1, &ublk.Request{Op: ublk.OpRead, Offset: 64 * 512, Length: 512, Data: buf[:512]})
	got := <-c
	if got.tag != 1 || got.errno != syscall.EREMOTEIO {
		t.Fatalf("read past the end: tag %d errno %v, want tag 1 EREMOTEIO", got.tag, got.errno)
	}
}

type completion struct {
	tag   uint16
	errno syscall.Errno
}

type chanCompleter chan completion

func (c chanCompleter) Complete(tag uint16, errno syscall.Errno) { c <- completion{tag, errno} }

// BenchmarkUblkBackendRead4K: 4 KiB reads through the adapter (Submit,
// the initiator, the completion goroutine, Complete) with the queue's
// depth in flight; allocations per read are reported (0 expected).
func BenchmarkUblkBackendRead4K(b *testing.B) {
	fab := soft.NewFabric()
	_, ls := fabricTarget(b, fab, mem.New(1<<15, 512), "ublkbench:4420")
	s := openSession(b, soft.New(soft.Options{Fabric: fab}), []string{ls[0].Addr()}, 1, 32)
	be, err := ublkback.New(s)
	if err != nil {
		b.Fatal(err)
	}
	depth := be.Geometry().Depth
	c := make(chanCompleter, depth)
	q, err := be.OpenQueue(0, depth, c)
	if err != nil {
		b.Fatal(err)
	}
	defer q.Close()
	reqs := make([]ublk.Request, depth)
	blocks := uint64(s.Size()) / 4096
	next := uint64(0)
	submit := func(tag uint16) {
		r := &reqs[tag]
		*r = ublk.Request{Op: ublk.OpRead, Offset: (next % blocks) * 4096, Length: 4096, Data: q.Buffer(tag)[:4096]}
		next++
		q.Submit(tag, r)
	}
	b.ReportAllocs()
	b.ResetTimer()
	inFlight := 0
	for i := 0; i < b.N; i++ {
		if inFlight < depth {
			submit(uint16(inFlight))
			inFlight++
			continue
		}
		got := <-c
		if got.errno != 0 {
			b.Fatal(got.errno)
		}
		submit(got.tag)
	}
	for ; inFlight > 0; inFlight-- {
		<-c
	}
}
