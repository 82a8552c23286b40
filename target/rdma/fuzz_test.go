package rdma

import (
	"math"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/nvme"
)

// FuzzParseSGL feeds arbitrary capsules (SQE + in-capsule bytes) to the
// SGL parser of an I/O queue and of the admin queue. Whatever the bytes,
// it must not panic, a keyed span must neither exceed MDTS nor wrap 2^64,
// and in-capsule data must lie inside the bytes received and inside the
// queue's in-capsule limit (the 2026 nvmet-rdma inline-SGL overflow).
func FuzzParseSGL(f *testing.F) {
	seed := func(fill func(s *nvme.SQE), icd int) []byte {
		var s nvme.SQE
		fill(&s)
		return append(s[:], make([]byte, icd)...)
	}
	f.Add(seed(func(s *nvme.SQE) {
		s.SetRW(nvme.IORead, 1, 0, 8, 0)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetKeyed(0x1000, 4096, 7, nvme.SGLSubtypeAddress)
	}, 0), uint16(1))
	f.Add(seed(func(s *nvme.SQE) {
		s.SetRW(nvme.IOWrite, 1, 0, 1, 0)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetDataBlock(0, 512, nvme.SGLSubtypeOffset)
	}, 512), uint16(1))
	f.Add(seed(func(s *nvme.SQE) {
		s.SetRW(nvme.IOWrite, 1, 0, 1, 0)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetDataBlock(math.MaxUint64-10, 512, nvme.SGLSubtypeOffset)
	}, 1024), uint16(1))
	f.Add(seed(func(s *nvme.SQE) {
		s.SetRW(nvme.IOWrite, 1, 0, 1, 0)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetKeyed(math.MaxUint64-4094, 4096, 7, nvme.SGLSubtypeInvalidate)
	}, 0), uint16(1))
	f.Add(seed(func(s *nvme.SQE) {
		s.SetConnect(0, 31, 0, 5000)
		s.SetPSDT(nvme.PSDTSGL)
		s.SGL1().SetDataBlock(0, nvme.ConnectDataSize, nvme.SGLSubtypeOffset)
	}, nvme.ConnectDataSize), uint16(0))
	const icdLimit = 4096
	l := &Listener{cfg: Config{MaxDataTransfer: DefaultMaxDataTransfer}}
	f.Fuzz(func(t *testing.T, capsule []byte, qid uint16) {
		if len(capsule) < nvme.SQESize || len(capsule) > nvme.SQESize+2*icdLimit {
			return // shorter capsules never reach parseSGL; longer ones cannot be received
		}
		q := &queue{l: l, params: queueParams{qid: qid % 2, icd: icdLimit}}
		if q.params.qid == 0 {
			q.params.icd = 0
		}
		var r request
		r.reset()
		r.req.SQE, _ = nvme.LoadSQE(capsule)
		st := q.parseSGL(&r, capsule[nvme.SQESize:])
		if !st.OK() {
			return
		}
		if r.keyed {
			if int64(r.length) > int64(l.cfg.MaxDataTransfer) || r.length == 0 {
				t.Fatalf("keyed length %d accepted (MDTS %d)", r.length, l.cfg.MaxDataTransfer)
			}
			if r.raddr > math.MaxUint64-uint64(r.length-1) {
				t.Fatalf("keyed span %#x+%d wraps", r.raddr, r.length)
			}
		}
		if n := len(r.req.Data); n > 0 {
			if int(r.req.Length) != n || n > q.params.icd || n > len(capsule)-nvme.SQESize {
				t.Fatalf("in-capsule data of %d bytes (Length %d, icd %d, received %d)",
					n, r.req.Length, q.params.icd, len(capsule)-nvme.SQESize)
			}
			// Data must alias the received bytes after the SQE.
			end := &capsule[len(capsule)-1]
			first := &r.req.Data[0]
			last := &r.req.Data[n-1]
			if uintptrOf(first) < uintptrOf(&capsule[nvme.SQESize]) || uintptrOf(last) > uintptrOf(end) {
				t.Fatal("in-capsule data outside the received capsule")
			}
		}
	})
}

func uintptrOf(b *byte) uintptr { return uintptr(unsafe.Pointer(b)) }
