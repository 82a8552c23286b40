package target

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/null"
	"github.com/rdmablk/rdmablk/nvme"
)

// benchInline measures the per-command cost of the core on the inline path
// (non-blocking backend): Execute parses, checks, runs and completes.
func benchInline(b *testing.B, op uint8) {
	benchInlineNS(b, op, NamespaceConfig{NSID: 1, Backend: null.New(1<<20, 4096)})
}

// nopMeter discards samples (the cost of metering in the core itself).
type nopMeter struct{}

func (nopMeter) MeterIO(IOSample) {}

// BenchmarkExecuteRead4KNullMetered is BenchmarkExecuteRead4KNull with a
// per-namespace IOMeter (cluster volumes): one interface call per I/O and
// a clock read for one I/O in meterSampleEvery.
func BenchmarkExecuteRead4KNullMetered(b *testing.B) {
	benchInlineNS(b, nvme.IORead, NamespaceConfig{NSID: 1, Backend: null.New(1<<20, 4096), Meter: nopMeter{}})
}

func benchInlineNS(b *testing.B, op uint8, nc NamespaceConfig) {
	s := newIOSetup(b, Options{}, nc)
	r := &Request{Length: 4096, Data: make([]byte, 4096), Dir: nvme.OpcodeDirection(op)}
	r.SQE.SetRW(op, 1, 0, 1, 0)
	r.SQE.SGL1().SetKeyed(0x1000, 4096, 1, nvme.SGLSubtypeAddress)
	q := s.io.q
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.SQE.SetCID(uint16(i))
		binaryPutSLBA(&r.SQE, uint64(i)&0xFFFFF)
		if !q.Execute(r) {
			b.Fatal("null backend did not complete inline")
		}
		if !r.Status().OK() {
			b.Fatal(r.Status())
		}
	}
}

// binaryPutSLBA sets CDW10-11 without SetRW's clearing (cheap).
func binaryPutSLBA(s *nvme.SQE, lba uint64) {
	s.SetCDW(10, uint32(lba))
	s.SetCDW(11, uint32(lba>>32))
}

func BenchmarkExecuteRead4KNull(b *testing.B)  { benchInline(b, nvme.IORead) }
func BenchmarkExecuteWrite4KNull(b *testing.B) { benchInline(b, nvme.IOWrite) }

// BenchmarkExecuteRead4KMemWorkers measures the worker-pool path: a mem
// backend with NonBlocking hidden, 32 commands in flight.
func BenchmarkExecuteRead4KMemWorkers(b *testing.B) {
	be := &countingBackend{Backend: mem.New(1<<16, 4096)}
	s := newIOSetup(b, Options{Workers: 4}, NamespaceConfig{NSID: 1, Backend: be})
	const depth = 32
	reqs := make([]*Request, depth)
	for i := range reqs {
		r := &Request{Length: 4096, Data: make([]byte, 4096), Dir: nvme.DirCtrlToHost}
		r.SQE.SetRW(nvme.IORead, 1, uint64(i), 1, 0)
		reqs[i] = r
	}
	q, done := s.io.q, s.io.conn.completed
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	inflight := 0
	for i := 0; i < b.N; i++ {
		var r *Request
		if i < depth {
			r = reqs[i]
		} else {
			r = <-done
			inflight--
			if !r.Status().OK() {
				b.Fatal(r.Status())
			}
		}
		r.SQE.SetCID(uint16(i))
		if q.Execute(r) {
			b.Fatalf("worker path completed inline: %v", r.Status())
		}
		inflight++
	}
	for ; inflight > 0; inflight-- {
		<-done
	}
}

// TestExecuteAllocs pins the zero-allocation claim of the inline I/O path
// outside benchmarks, so a regression fails the normal test run.
func TestExecuteAllocs(t *testing.T) {
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: null.New(1<<20, 4096)},
		NamespaceConfig{NSID: 2, Backend: mem.New(1<<10, 4096)},
		NamespaceConfig{NSID: 3, Backend: null.New(1<<20, 4096), Meter: nopMeter{}})
	for _, c := range []struct {
		name string
		nsid uint32
		op   uint8
	}{{"null read", 1, nvme.IORead}, {"null write", 1, nvme.IOWrite}, {"mem read", 2, nvme.IORead}, {"mem write", 2, nvme.IOWrite},
		{"metered read", 3, nvme.IORead}} {
		r := &Request{Length: 4096, Data: make([]byte, 4096), Dir: nvme.OpcodeDirection(c.op)}
		r.SQE.SetRW(c.op, c.nsid, 3, 1, 0)
		q := s.io.q
		q.Execute(r) // warm up (mem allocates its chunk on first write)
		allocs := testing.AllocsPerRun(100, func() {
			if !q.Execute(r) || !r.Status().OK() {
				t.Fatal(r.Status())
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocs per Execute", c.name, allocs)
		}
	}
}
