package file

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
)

const benchFile = 64 << 20

// benchBackend opens a 64 MiB file (data written, not sparse, so reads hit
// allocated blocks) in b.TempDir.
func benchBackend(b *testing.B, mode DirectMode) *Backend {
	b.Helper()
	path := filepath.Join(b.TempDir(), "bench")
	d, err := Open(path, Options{Size: benchFile, BlockSize: 4096, Direct: mode})
	if errors.Is(err, ErrDirectUnsupported) {
		b.Skip("no O_DIRECT here")
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	chunk := AlignedBuffer(1<<20, 4096)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for off := uint64(0); off < benchFile/4096; off += 256 {
		if err := d.WriteAt([][]byte{chunk}, off, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := d.Flush(); err != nil {
		b.Fatal(err)
	}
	return d
}

// rng is a tiny xorshift so that picking LBAs allocates nothing.
type rng uint64

func (r *rng) next(n uint64) uint64 {
	x := uint64(*r)
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	*r = rng(x)
	return x % n
}

func benchIO(b *testing.B, mode DirectMode, write bool, flags blockdev.WriteFlags, vec [][]byte) {
	d := benchBackend(b, mode)
	var total int
	for _, p := range vec {
		total += len(p)
	}
	nblk := uint64(total / 4096)
	r := rng(0x9E3779B97F4A7C15)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		lba := r.next(d.Blocks()-nblk+1) &^ (nblk - 1)
		var err error
		if write {
			err = d.WriteAt(vec, lba, flags)
		} else {
			err = d.ReadAt(vec, lba)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	s := d.Stats()
	if mode == DirectOn && s.BufferedIOs != 0 {
		b.Fatalf("aligned benchmark went buffered: %+v", s)
	}
}

func one4K() [][]byte { return [][]byte{AlignedBuffer(4096, 4096)} }

func four4K() [][]byte {
	v := make([][]byte, 4)
	for i := range v {
		v[i] = AlignedBuffer(4096, 4096)
	}
	return v
}

// 4 KiB random I/O, aligned buffers, O_DIRECT.
func BenchmarkRandRead4KDirect(b *testing.B)  { benchIO(b, DirectOn, false, 0, one4K()) }
func BenchmarkRandWrite4KDirect(b *testing.B) { benchIO(b, DirectOn, true, 0, one4K()) }

// The same through the page cache.
func BenchmarkRandRead4KBuffered(b *testing.B)  { benchIO(b, DirectOff, false, 0, one4K()) }
func BenchmarkRandWrite4KBuffered(b *testing.B) { benchIO(b, DirectOff, true, 0, one4K()) }

// Vectored (preadv/pwritev, stack iovecs): 4 x 4 KiB buffers.
func BenchmarkRandReadV16KDirect(b *testing.B)  { benchIO(b, DirectOn, false, 0, four4K()) }
func BenchmarkRandWriteV16KDirect(b *testing.B) { benchIO(b, DirectOn, true, 0, four4K()) }

// FUA: pwritev2(RWF_DSYNC).
func BenchmarkRandWrite4KDirectFUA(b *testing.B) {
	benchIO(b, DirectOn, true, blockdev.WriteFUA, one4K())
}
