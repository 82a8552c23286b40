package tcp

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/rdmablk/rdmablk/internal/tcpzc"
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

// benchQD keeps qd 4 KiB commands in flight on one I/O queue (mem
// backend: the core completes them inline), as the kernel host does for
// fio iodepth=qd: the capsules of the commands that completed go out
// together once the host has read every PDU it holds. Writes carry their
// data in the capsule. It reports the socket writes of the target per
// command (writes/op): what the response path costs in system calls, and
// how often a write was left to the writer goroutine (handoffs/op).
func benchQD(b *testing.B, write bool, qd int) { benchQDSize(b, write, qd, 4096, 0) }

// benchQDSize is benchQD with commands of n bytes and the given
// Config.ZeroCopySendMin (0: default).
func benchQDSize(b *testing.B, write bool, qd, n, zcMin int) {
	r := newRig(b, func(c *Config) { c.ZeroCopySendMin = zcMin })
	admin := r.adminHost(b, tcppdu.Digests{}, 8192)
	h := r.ioHost(b, admin, tcppdu.Digests{}, 8192)
	data := make([]byte, n)
	out := make([]byte, 0, qd*(tcppdu.CapsuleCmdHLen+n))
	hdr := make([]byte, 256)
	var sqe nvme.SQE
	put := func(i int) {
		lba := uint64(i*(n/testBlock)) % uint64(testBlocks-n/testBlock)
		icd := 0
		if write {
			sqe.SetRW(nvme.IOWrite, 1, lba, uint32(n/testBlock), 0)
			sqe.SGL1().SetDataBlock(0, uint32(n), nvme.SGLSubtypeOffset)
			icd = n
		} else {
			sqe.SetRW(nvme.IORead, 1, lba, uint32(n/testBlock), 0)
			setTransportSGL(&sqe, uint32(n))
		}
		sqe.SetPSDT(nvme.PSDTSGL)
		sqe.SetCID(uint16(i % qd))
		k := tcppdu.PutCapsuleCmd(out[len(out):cap(out)], &sqe, icd, tcppdu.Digests{}, 0)
		out = out[:len(out)+k]
		if write {
			out = append(out, data...)
		}
	}
	writes0, hand0 := r.l.stats.writes.Load(), r.l.stats.writerHandoffs.Load()
	b.ReportAllocs()
	b.SetBytes(int64(n))
	b.ResetTimer()
	sent := 0
	for ; sent < min(qd, b.N); sent++ {
		put(sent)
	}
	for done := 0; done < b.N; {
		if len(out) > 0 && h.br.Buffered() == 0 {
			if _, err := h.nc.Write(out); err != nil {
				b.Fatal(err)
			}
			out = out[:0]
		}
		if _, err := io.ReadFull(h.br, hdr[:8]); err != nil {
			b.Fatal(err)
		}
		ch, _ := tcppdu.ParseCommonHeader(hdr)
		f, err := ch.Frame(tcppdu.Limits{MaxData: n})
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
		}
		if ch.Type != tcppdu.TypeCapsuleResp {
			continue
		}
		if cqe, _ := tcppdu.ParseCapsuleResp(hdr); cqe.Status() != nvme.StatusSuccess {
			b.Fatal(cqe.Status())
		}
		done++
		if sent < b.N {
			put(sent)
			sent++
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(r.l.stats.writes.Load()-writes0)/float64(b.N), "writes/op")
	b.ReportMetric(float64(r.l.stats.writerHandoffs.Load()-hand0)/float64(b.N), "handoffs/op")
}

func BenchmarkRead4KQD32(b *testing.B)  { benchQD(b, false, 32) }
func BenchmarkWrite4KQD32(b *testing.B) { benchQD(b, true, 32) }

// 128 KiB reads, 8 in flight, sent zero-copy (the default threshold,
// forced on loopback) and copied: on loopback the kernel copies anyway
// when it delivers, so this shows the cost of the zero-copy machinery
// (pinning, notices, held slots), not its gain; 0 allocs per read either
// way.
func BenchmarkRead128KQD8ZeroCopy(b *testing.B) {
	tcpzc.AllowLoopback.Store(true)
	defer func() { tcpzc.AllowLoopback.Store(false) }()
	benchQDSize(b, false, 8, 128<<10, 0)
}
func BenchmarkRead128KQD8Copy(b *testing.B) { benchQDSize(b, false, 8, 128<<10, -1) }
