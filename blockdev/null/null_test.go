package null_test

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/null"
)

func TestContract(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		return null.New(blocks, bs)
	}, blockdevtest.Caps{Persistent: false, Capabilities: blockdevtest.CapResizer | blockdevtest.CapNonBlocking})
}

func TestReadClearsAndWriteDrops(t *testing.T) {
	b := null.New(8, 512)
	p := make([]byte, 1024)
	for i := range p {
		p[i] = 0xFF
	}
	if err := b.WriteAt([][]byte{p}, 0, blockdev.WriteFUA); err != nil {
		t.Fatal(err)
	}
	if err := b.ReadAt([][]byte{p[:300], p[300:]}, 0); err != nil {
		t.Fatal(err)
	}
	for i, c := range p {
		if c != 0 {
			t.Fatalf("byte %d = %#x after read, want 0", i, c)
		}
	}
}

func TestNoAllocations(t *testing.T) {
	b := null.New(1<<30, 4096)
	vec := [][]byte{make([]byte, 4096), make([]byte, 8192)}
	allocs := testing.AllocsPerRun(100, func() {
		_ = b.WriteAt(vec, 12345, blockdev.WriteFUA)
		_ = b.ReadAt(vec, 12345)
		_ = b.WriteZeroes(7, 9)
		_ = b.Discard(7, 9)
		_ = b.Flush()
		_ = b.ReadAt(vec, b.Blocks()) // error path
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkRead4K(b *testing.B) {
	d := null.New(1<<20, 4096)
	vec := [][]byte{make([]byte, 4096)}
	b.SetBytes(4096)
	b.ReportAllocs()
	var lba uint64
	for b.Loop() {
		if err := d.ReadAt(vec, lba); err != nil {
			b.Fatal(err)
		}
		lba = (lba + 7919) % d.Blocks()
	}
}

func BenchmarkWrite4K(b *testing.B) {
	d := null.New(1<<20, 4096)
	vec := [][]byte{make([]byte, 4096)}
	b.SetBytes(4096)
	b.ReportAllocs()
	var lba uint64
	for b.Loop() {
		if err := d.WriteAt(vec, lba, 0); err != nil {
			b.Fatal(err)
		}
		lba = (lba + 7919) % d.Blocks()
	}
}
