package soft_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// endpoint is one side of a benchmark or test connection.
type endpoint struct {
	id  verbs.ConnID
	pd  verbs.ProtectionDomain
	scq verbs.CompletionQueue
	rcq verbs.CompletionQueue
	qp  verbs.QueuePair
}

// newEndpoint creates PD, CQs and QP on id; cleanup closes them.
func newEndpoint(tb testing.TB, id verbs.ConnID, c verbs.QPCap) *endpoint {
	tb.Helper()
	d := id.Device()
	pd, err := d.AllocPD()
	if err != nil {
		tb.Fatal(err)
	}
	scq, err := d.CreateCQ(c.MaxSendWR+8, 0)
	if err != nil {
		tb.Fatal(err)
	}
	rcq, err := d.CreateCQ(c.MaxRecvWR+8, 0)
	if err != nil {
		tb.Fatal(err)
	}
	qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: scq, RecvCQ: rcq, Cap: c})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		id.Close()
		scq.Close()
		rcq.Close()
		pd.Close()
	})
	return &endpoint{id: id, pd: pd, scq: scq, rcq: rcq, qp: qp}
}

func (ep *endpoint) reg(tb testing.TB, buf []byte, acc verbs.Access) verbs.MemoryRegion {
	tb.Helper()
	mr, err := ep.pd.RegisterMemory(buf, acc)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { mr.Close() })
	return mr
}

// connectPair connects a client and a server provider (on a Fabric or over
// TCP) with the given QP capabilities and connect parameters.
func connectPair(tb testing.TB, tcp bool, prof soft.Profile, c verbs.QPCap, cp, ap verbs.ConnParam) (client, server *endpoint) {
	tb.Helper()
	var fab *soft.Fabric
	addr := "127.0.0.1:0"
	if !tcp {
		fab = soft.NewFabric()
		addr = "bench:4420"
	}
	sp := soft.New(soft.Options{Profile: prof, Fabric: fab})
	cpv := soft.New(soft.Options{Profile: prof, Fabric: fab})
	tb.Cleanup(func() {
		cpv.Close()
		sp.Close()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	tb.Cleanup(cancel)
	ln, err := sp.Listen(addr, verbs.ListenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	cid, err := cpv.Resolve(ctx, ln.Addr(), verbs.ResolveOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	client = newEndpoint(tb, cid, c)
	errc := make(chan error, 1)
	go func() {
		_, err := cid.Connect(ctx, cp)
		errc <- err
	}()
	req, err := ln.Accept(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	server = newEndpoint(tb, req.ID, c)
	if err := req.ID.Accept(ctx, ap); err != nil {
		tb.Fatal(err)
	}
	if err := <-errc; err != nil {
		tb.Fatal(err)
	}
	return client, server
}

var benchCap = verbs.QPCap{MaxSendWR: 128, MaxRecvWR: 128, MaxSendSGE: 1, MaxRecvSGE: 1}

var fullDepth = verbs.ConnParam{ResponderResources: 16, InitiatorDepth: 16, RetryCount: 7, RNRRetryCount: 7}

// pollSome polls at least one completion, blocking on the CQ event if none.
func pollSome(tb testing.TB, cq verbs.CompletionQueue, wc []verbs.WorkCompletion) int {
	for {
		n, err := cq.Poll(wc)
		if err != nil {
			tb.Fatal(err)
		}
		if n > 0 {
			for _, w := range wc[:n] {
				if w.Status != verbs.WCSuccess {
					tb.Fatalf("completion %+v", w)
				}
			}
			return n
		}
		if err := cq.ReqNotify(); err != nil {
			tb.Fatal(err)
		}
		if n, _ = cq.Poll(wc); n > 0 {
			return n
		}
		<-cq.Notify()
	}
}

// benchRDMA streams b.N RDMA operations of size bytes with window WRs
// outstanding.
func benchRDMA(b *testing.B, tcp bool, op verbs.Opcode, size, window int) {
	c, s := connectPair(b, tcp, soft.ProfileDefault, benchCap, fullDepth, fullDepth)
	local := c.reg(b, make([]byte, size*window), verbs.AccessLocalWrite)
	remote := s.reg(b, make([]byte, size*window), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	wrs := make([]verbs.SendWR, window)
	sges := make([]verbs.SGE, window)
	for i := range wrs {
		sges[i] = verbs.SGE{Addr: local.Addr() + uint64(i*size), Length: uint32(size), LKey: local.LKey()}
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: op, Flags: verbs.SendSignaled, SGL: sges[i : i+1],
			RemoteAddr: remote.Addr() + uint64(i*size), RKey: remote.RKey()}
	}
	wc := make([]verbs.WorkCompletion, window)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	posted, done := 0, 0
	free := window
	for done < b.N {
		if k := min(free, b.N-posted); k > 0 {
			if n, err := c.qp.PostSend(wrs[:k]); n != k || err != nil {
				b.Fatalf("PostSend: %d, %v", n, err)
			}
			posted += k
			free -= k
		}
		n := pollSome(b, c.scq, wc)
		done += n
		free += n
	}
}

// overBoth runs f as sub-benchmarks over a Fabric and over loopback TCP.
func overBoth(b *testing.B, f func(b *testing.B, tcp bool)) {
	b.Run("Fabric", func(b *testing.B) { f(b, false) })
	b.Run("TCP", func(b *testing.B) { f(b, true) })
}

func BenchmarkWrite4K(b *testing.B) {
	overBoth(b, func(b *testing.B, tcp bool) { benchRDMA(b, tcp, verbs.OpRDMAWrite, 4<<10, 32) })
}

func BenchmarkWrite128K(b *testing.B) {
	overBoth(b, func(b *testing.B, tcp bool) { benchRDMA(b, tcp, verbs.OpRDMAWrite, 128<<10, 16) })
}

func BenchmarkRead4K(b *testing.B) {
	overBoth(b, func(b *testing.B, tcp bool) { benchRDMA(b, tcp, verbs.OpRDMARead, 4<<10, 16) })
}

// BenchmarkRead128K is the soft provider side of the harness's 128 KiB
// sequential read comparison (RDMA READs of 128 KiB, 8 outstanding: the
// data flows target → initiator as in an NVMe read); BenchmarkRawTCP128K is
// its baseline.
func BenchmarkRead128K(b *testing.B) {
	overBoth(b, func(b *testing.B, tcp bool) { benchRDMA(b, tcp, verbs.OpRDMARead, 128<<10, 8) })
}

// benchSendRecv streams b.N SENDs of size bytes; the benchmark goroutine
// also reposts the server's receives.
func benchSendRecv(b *testing.B, tcp bool, size int) {
	const window = 32
	c, s := connectPair(b, tcp, soft.ProfileDefault, benchCap, fullDepth, fullDepth)
	src := c.reg(b, make([]byte, size), 0)
	dst := s.reg(b, make([]byte, size*benchCap.MaxRecvWR), verbs.AccessLocalWrite)
	rwrs := make([]verbs.RecvWR, benchCap.MaxRecvWR)
	rsges := make([]verbs.SGE, benchCap.MaxRecvWR)
	for i := range rwrs {
		rsges[i] = verbs.SGE{Addr: dst.Addr() + uint64(i*size), Length: uint32(size), LKey: dst.LKey()}
		rwrs[i] = verbs.RecvWR{ID: uint64(i), SGL: rsges[i : i+1]}
	}
	if _, err := s.qp.PostRecv(rwrs); err != nil {
		b.Fatal(err)
	}
	swrs := make([]verbs.SendWR, window)
	sge := []verbs.SGE{{Addr: src.Addr(), Length: uint32(size), LKey: src.LKey()}}
	for i := range swrs {
		swrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: sge}
	}
	wc := make([]verbs.WorkCompletion, benchCap.MaxRecvWR)
	repost := make([]verbs.RecvWR, 0, benchCap.MaxRecvWR)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	posted, done := 0, 0
	free := window
	for done < b.N {
		if k := min(free, b.N-posted); k > 0 {
			if n, err := c.qp.PostSend(swrs[:k]); n != k || err != nil {
				b.Fatalf("PostSend: %d, %v", n, err)
			}
			posted += k
			free -= k
		}
		n, err := s.rcq.Poll(wc)
		if err != nil {
			b.Fatal(err)
		}
		repost = repost[:0]
		for _, w := range wc[:n] {
			repost = append(repost, rwrs[w.ID])
		}
		if n > 0 {
			if _, err := s.qp.PostRecv(repost); err != nil {
				b.Fatal(err)
			}
		}
		m := pollSome(b, c.scq, wc)
		done += m
		free += m
	}
}

func BenchmarkSendRecv(b *testing.B) {
	overBoth(b, func(b *testing.B, tcp bool) { benchSendRecv(b, tcp, 64) })
}

// BenchmarkRawTCP128K is the baseline for Write128K/TCP: the same bytes over
// a plain loopback TCP connection, no framing, no acknowledgements.
func BenchmarkRawTCP128K(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	const size = 128 << 10
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		buf := make([]byte, size)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				if err == io.EOF {
					err = nil
				}
				done <- err
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	b.SetBytes(size)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
