package file

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
)

// TestResizeServedTail: a file larger than the size it is served at keeps
// bytes past the served end; growing the volume over them reads zeroes,
// not those bytes.
func TestResizeServedTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v")
	junk := bytes.Repeat([]byte{0xEE}, 2<<20)
	if err := os.WriteFile(path, junk, 0o600); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, path, Options{Size: 1 << 20, BlockSize: 4096})
	if err := b.Resize(512); err != nil { // 2 MiB
		t.Fatal(err)
	}
	got := AlignedBuffer(4096, 4096)
	for _, lba := range []uint64{256, 511} {
		if err := b.ReadAt([][]byte{got}, lba); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, make([]byte, 4096)) {
			t.Fatalf("block %d after grow holds old bytes past the served end", lba)
		}
	}
	if err := b.ReadAt([][]byte{got}, 255); err != nil || got[0] != 0xEE {
		t.Fatalf("block 255 (served before) changed: %v %x", err, got[0])
	}
}

// TestResizeRefusals: impossible sizes, read-only and 0 blocks are
// refused and leave the capacity as it was; a resized volume reopens at
// its new size.
func TestResizeRefusals(t *testing.T) {
	dir := smallTmpfs(t, "1m")
	path := filepath.Join(dir, "v")
	b := mustOpen(t, path, Options{Size: 256 << 10, BlockSize: 4096})
	for _, n := range []uint64{1 << 40, 1 << 62, 1024} { // 4 PiB, beyond int64, 4 MiB
		if err := b.Resize(n); !errors.Is(err, ErrTooLarge) {
			t.Errorf("Resize(%d blocks) on a 1 MiB tmpfs = %v, want ErrTooLarge", n, err)
		}
	}
	if err := b.Resize(0); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("Resize(0) = %v", err)
	}
	if b.Blocks() != 64 {
		t.Fatalf("capacity %d after refused resizes", b.Blocks())
	}
	if err := b.Resize(128); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, path, Options{ReadOnly: true, BlockSize: 4096})
	if ro.Blocks() != 128 {
		t.Fatalf("reopened at %d blocks, want 128", ro.Blocks())
	}
	if err := ro.Resize(256); !errors.Is(err, blockdev.ErrReadOnly) {
		t.Fatalf("read-only Resize = %v", err)
	}
}
