package tcp

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// benchIO runs b.N commands at queue depth 1 on one I/O queue with a lean
// host (preallocated buffers, no allocation per command), so allocs/op is
// the target's: the I/O path must allocate nothing. Speed figures from it
// mean nothing on a shared host; the allocation count does.
func benchIO(b *testing.B, write bool, n int, dg tcppdu.Digests) {
	r := newRig(b, nil)
	admin := r.adminHost(b, dg, 8192)
	h := r.ioHost(b, admin, dg, 8192)
	data := make([]byte, n)
	capsule := make([]byte, 256)
	hdr := make([]byte, 256)
	var dig [4]byte
	var sqe nvme.SQE
	op := uint8(nvme.IORead)
	if write {
		op = nvme.IOWrite
	}
	sqe.SetRW(op, 1, 0, uint32(n/testBlock), 0)
	sqe.SetPSDT(nvme.PSDTSGL)
	icd := 0
	if write {
		icd = n
		sqe.SGL1().SetDataBlock(0, uint32(n), nvme.SGLSubtypeOffset)
	} else {
		setTransportSGL(&sqe, uint32(n))
	}
	b.ReportAllocs()
	b.SetBytes(int64(n))
	b.ResetTimer()
	for i := range b.N {
		sqe.SetCID(uint16(i))
		k := tcppdu.PutCapsuleCmd(capsule, &sqe, icd, dg, 0)
		if _, err := h.nc.Write(capsule[:k]); err != nil {
			b.Fatal(err)
		}
		if write {
			if _, err := h.nc.Write(data); err != nil {
				b.Fatal(err)
			}
			if dg.Data {
				binary.LittleEndian.PutUint32(dig[:], tcppdu.Digest(data))
				if _, err := h.nc.Write(dig[:]); err != nil {
					b.Fatal(err)
				}
			}
		}
		for {
			if _, err := io.ReadFull(h.br, hdr[:8]); err != nil {
				b.Fatal(err)
			}
			ch, _ := tcppdu.ParseCommonHeader(hdr)
			f, err := ch.Frame(tcppdu.Limits{Digests: dg, MaxData: n})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(h.br, hdr[8:f.HeaderLen]); err != nil {
				b.Fatal(err)
			}
			if f.DataLen > 0 {
				if _, err := io.ReadFull(h.br, data[:f.DataLen]); err != nil {
					b.Fatal(err)
				}
				if f.DataDigest {
					if _, err := io.ReadFull(h.br, dig[:]); err != nil {
						b.Fatal(err)
					}
				}
			}
			if ch.Type == tcppdu.TypeCapsuleResp {
				cqe, _ := tcppdu.ParseCapsuleResp(hdr)
				if cqe.Status() != nvme.StatusSuccess {
					b.Fatal(cqe.Status())
				}
				break
			}
		}
	}
}

func BenchmarkRead4K(b *testing.B)  { benchIO(b, false, 4096, tcppdu.Digests{}) }
func BenchmarkWrite4K(b *testing.B) { benchIO(b, true, 4096, tcppdu.Digests{}) }
func BenchmarkRead4KDigests(b *testing.B) {
	benchIO(b, false, 4096, tcppdu.Digests{Header: true, Data: true})
}
