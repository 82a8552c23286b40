package nvme

import "testing"

// The per-I/O path: load a received capsule, read the command fields and
// the SGL, bounds-check in-capsule data, build and read a completion. None
// of it may allocate.

var (
	sinkU64 uint64
	sinkInt int
	sinkOK  bool
)

func hotPathTarget(capsule []byte) {
	s, ok := LoadSQE(capsule)
	if !ok {
		return
	}
	rw := RWCmd{&s}
	sinkU64 += rw.SLBA() + uint64(rw.NLB())
	sgl := s.SGL1()
	if sgl.IsInCapsule() {
		off, n, ok := sgl.InCapsuleSpan(len(capsule) - SQESize)
		sinkInt += off + n
		sinkOK = ok
	} else if sgl.IsKeyed() {
		sinkU64 += sgl.Address() + uint64(sgl.Length()) + uint64(sgl.Key())
	}
	var c CQE
	c.SetCID(s.CID())
	c.SetSQHD(1)
	c.SetStatus(StatusLBAOutOfRange.WithDNR())
	sinkOK = c.Status().DNR()
}

func hotPathInitiator(s *SQE, c *CQE, dsm []byte) {
	s.SetRW(IOWrite, 1, 4096, 8, RWFUA)
	s.SetCID(7)
	s.SGL1().SetKeyed(0x1000, 4096, 0xABCD, SGLSubtypeAddress)
	PutDSMRange(dsm, 0, DSMRange{NLB: 8, SLBA: 16})
	r, _ := ParseDSMRange(dsm, 0)
	sinkU64 += r.SLBA
	st := c.Status()
	sinkOK = st.OK() || st.DNR()
	sinkInt += int(c.CID())
}

func TestHotPathNoAllocs(t *testing.T) {
	capsule := make([]byte, SQESize+4096)
	var s SQE
	s.SetRW(IOWrite, 1, 0, 8, 0)
	s.SGL1().SetDataBlock(0, 4096, SGLSubtypeOffset)
	copy(capsule, s[:])
	if n := testing.AllocsPerRun(100, func() { hotPathTarget(capsule) }); n != 0 {
		t.Errorf("target hot path: %v allocs", n)
	}
	var c CQE
	dsm := make([]byte, DSMRangeSize)
	if n := testing.AllocsPerRun(100, func() { hotPathInitiator(&s, &c, dsm) }); n != 0 {
		t.Errorf("initiator hot path: %v allocs", n)
	}
}

func BenchmarkHotPathTarget(b *testing.B) {
	capsule := make([]byte, SQESize+4096)
	var s SQE
	s.SetRW(IOWrite, 1, 0, 8, 0)
	s.SGL1().SetDataBlock(0, 4096, SGLSubtypeOffset)
	copy(capsule, s[:])
	b.ReportAllocs()
	for b.Loop() {
		hotPathTarget(capsule)
	}
}

func BenchmarkHotPathInitiator(b *testing.B) {
	var s SQE
	var c CQE
	dsm := make([]byte, DSMRangeSize)
	b.ReportAllocs()
	for b.Loop() {
		hotPathInitiator(&s, &c, dsm)
	}
}

func BenchmarkInCapsuleSpan(b *testing.B) {
	var d SGL
	d.SetDataBlock(16, 4096, SGLSubtypeOffset)
	b.ReportAllocs()
	for b.Loop() {
		_, n, _ := d.InCapsuleSpan(8192)
		sinkInt += n
	}
}
