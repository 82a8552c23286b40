package reconcile

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/cluster/metrics"
)

func TestVolumeBackendSwap(t *testing.T) {
	small := mem.New(8, 512)
	big := mem.New(16, 512)
	v := newVolumeBackend(small, metrics.New().Volume("v"))
	buf := make([]byte, 512)
	if err := v.WriteAt([][]byte{buf}, 7, 0); err != nil {
		t.Fatal(err)
	}
	if v.Blocks() != 8 {
		t.Fatal(v.Blocks())
	}
	v.swap(big)
	if v.Blocks() != 16 {
		t.Fatal(v.Blocks())
	}
	if err := v.ReadAt([][]byte{buf}, 15); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if err := small.ReadAt([][]byte{buf}, 0); err == nil {
		t.Fatal("retired backend not closed")
	}
	var _ blockdev.Backend = v
}

func BenchmarkVolumeRead(b *testing.B) {
	v := newVolumeBackend(mem.New(1<<12, 512), metrics.New().Volume("v"))
	bufs := [][]byte{make([]byte, 4096)}
	b.ReportAllocs()
	b.SetBytes(4096)
	for b.Loop() {
		if err := v.ReadAt(bufs, 0); err != nil {
			b.Fatal(err)
		}
	}
}
