//go:build ibverbs

package ibverbs_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// benchPair is a connected client/server pair on one provider with a
// registered buffer each, for benchmarks.
type benchPair struct {
	cqp, sqp verbs.QueuePair
	ccq      verbs.CompletionQueue
	cmr, smr verbs.MemoryRegion
}

func newBenchPair(b testing.TB, depth int) *benchPair {
	addr := suiteAddr(b)
	p := newProvider(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := p.Listen(addr, verbs.ListenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	side := func(id verbs.ConnID) (verbs.QueuePair, verbs.CompletionQueue, verbs.MemoryRegion) {
		d := id.Device()
		pd, err := d.AllocPD()
		if err != nil {
			b.Fatal(err)
		}
		cq, err := d.CreateCQ(2*depth+8, 0)
		if err != nil {
			b.Fatal(err)
		}
		qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: cq, RecvCQ: cq,
			Cap: verbs.QPCap{MaxSendWR: depth, MaxRecvWR: depth, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			b.Fatal(err)
		}
		mem, err := syscall.Mmap(-1, 0, depth*4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			b.Fatal(err)
		}
		mr, err := pd.RegisterMemory(mem, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			id.Close()
			mr.Close()
			cq.Close()
			pd.Close()
			syscall.Munmap(mem)
		})
		return qp, cq, mr
	}
	cid, err := p.Resolve(ctx, ln.Addr(), verbs.ResolveOptions{})
	if err != nil {
		b.Fatal(err)
	}
	bp := &benchPair{}
	bp.cqp, bp.ccq, bp.cmr = side(cid)
	errc := make(chan error, 1)
	go func() {
		_, err := cid.Connect(ctx, verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7})
		errc <- err
	}()
	req, err := ln.Accept(ctx)
	if err != nil {
		b.Fatal(err)
	}
	bp.sqp, _, bp.smr = side(req.ID)
	if err := req.ID.Accept(ctx, verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RNRRetryCount: 7}); err != nil {
		b.Fatal(err)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return bp
}

// BenchmarkWrite4KBatch16: one PostSend of 16 signaled 4 KiB RDMA WRITEs
// (one cgo call) and Polls until the 16 completions are in. Over rxe the
// time is the kernel's; the allocations are ours and must be 0.
func BenchmarkWrite4KBatch16(b *testing.B) {
	const n = 16
	bp := newBenchPair(b, 32)
	wrs := make([]verbs.SendWR, n)
	sges := make([]verbs.SGE, n)
	for i := range wrs {
		sges[i] = verbs.SGE{Addr: bp.cmr.Addr() + uint64(i*4096), Length: 4096, LKey: bp.cmr.LKey()}
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: sges[i : i+1], RemoteAddr: bp.smr.Addr() + uint64(i*4096), RKey: bp.smr.RKey()}
	}
	wc := make([]verbs.WorkCompletion, n)
	b.SetBytes(n * 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if k, err := bp.cqp.PostSend(wrs); k != n || err != nil {
			b.Fatalf("PostSend %d: %v", k, err)
		}
		for got := 0; got < n; {
			k, err := bp.ccq.Poll(wc[:n-got])
			if err != nil {
				b.Fatal(err)
			}
			for _, w := range wc[:k] {
				if w.Status != verbs.WCSuccess {
					b.Fatalf("completion %+v", w)
				}
			}
			got += k
		}
	}
}

// BenchmarkPollEmpty is the cost of one empty Poll: the busy-poll step.
func BenchmarkPollEmpty(b *testing.B) {
	bp := newBenchPair(b, 4)
	wc := make([]verbs.WorkCompletion, 16)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n, err := bp.ccq.Poll(wc); n != 0 || err != nil {
			b.Fatal(n, err)
		}
	}
}
