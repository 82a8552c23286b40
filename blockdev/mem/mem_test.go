package mem_test

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/mem"
)

func TestContract(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		return mem.New(blocks, bs)
	}, blockdevtest.Caps{Persistent: true, Capabilities: blockdevtest.CapResizer | blockdevtest.CapNonBlocking})
}

func TestSparse(t *testing.T) {
	const tib = 1 << 40
	b := mem.New(tib/4096, 4096)
	if b.ChunksAllocated() != 0 {
		t.Fatalf("fresh volume has %d chunks", b.ChunksAllocated())
	}
	buf := make([]byte, 4096)
	if err := b.ReadAt([][]byte{buf}, b.Blocks()-1); err != nil {
		t.Fatal(err)
	}
	if b.ChunksAllocated() != 0 {
		t.Fatal("a read allocated a chunk")
	}
	buf[0] = 1
	if err := b.WriteAt([][]byte{buf}, b.Blocks()-1, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAt([][]byte{buf}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if n := b.ChunksAllocated(); n != 2 {
		t.Fatalf("after two writes far apart: %d chunks, want 2", n)
	}
	// Zeroing a range that covers a chunk completely frees it; a partial
	// range clears in place.
	if err := b.WriteZeroes(b.Blocks()-16, 16); err != nil {
		t.Fatal(err)
	}
	if err := b.Discard(1, 1); err != nil {
		t.Fatal(err)
	}
	if n := b.ChunksAllocated(); n != 1 {
		t.Fatalf("after freeing one chunk: %d chunks, want 1", n)
	}
	got := make([]byte, 4096)
	if err := b.ReadAt([][]byte{got}, 0); err != nil || got[0] != 1 {
		t.Fatalf("block 0 after discarding block 1: err %v, first byte %d", err, got[0])
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if n := b.ChunksAllocated(); n != 0 {
		t.Fatalf("Close kept %d chunks", n)
	}
}

func TestLargeBlocks(t *testing.T) {
	// Blocks larger than the 64 KiB chunk: one chunk per block.
	b := mem.New(4, 64<<10)
	p := make([]byte, 2*64<<10)
	for i := range p {
		p[i] = byte(i / 7)
	}
	if err := b.WriteAt([][]byte{p}, 1, 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(p))
	if err := b.ReadAt([][]byte{got[:100], got[100:]}, 1); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != p[i] {
			t.Fatalf("byte %d: %d, want %d", i, got[i], p[i])
		}
	}
}

func TestNewPanicsOnBadBlockSize(t *testing.T) {
	for _, bs := range []int{0, 511, 1000, 128 << 10} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(_, %d) did not panic", bs)
				}
			}()
			mem.New(1, bs)
		}()
	}
}

func TestCloseDuringIO(t *testing.T) {
	b := mem.New(1024, 512)
	buf := make([]byte, 512*64)
	done := make(chan error)
	go func() {
		for {
			if err := b.WriteAt([][]byte{buf}, 0, 0); err != nil {
				done <- err
				return
			}
		}
	}()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, blockdev.ErrClosed) {
		t.Fatalf("writer ended with %v, want ErrClosed", err)
	}
}

func BenchmarkWrite4K(b *testing.B) {
	d := mem.New(1<<20, 4096)
	buf := make([]byte, 4096)
	vec := [][]byte{buf}
	if err := d.WriteAt(vec, 0, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.WriteAt(vec, 0, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRead4K(b *testing.B) {
	d := mem.New(1<<20, 4096)
	buf := make([]byte, 4096)
	vec := [][]byte{buf}
	if err := d.WriteAt(vec, 0, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := d.ReadAt(vec, 0); err != nil {
			b.Fatal(err)
		}
	}
}
