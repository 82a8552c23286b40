package reconcile

import (
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/target"
)

// fixedSize hides every optional capability of its backend (Resizer
// included): the swap path of backends that cannot grow in place.
type fixedSize struct{ blockdev.Backend }

func TestVolumeBackendSwap(t *testing.T) {
	small := fixedSize{mem.New(8, 512)}
	big := fixedSize{mem.New(16, 512)}
	v := newVolumeBackend(small, metrics.New().Volume("v"))
	buf := make([]byte, 512)
	if err := v.WriteAt([][]byte{buf}, 7, 0); err != nil {
		t.Fatal(err)
	}
	if v.Blocks() != 8 {
		t.Fatal(v.Blocks())
	}
	if err := v.swap(big); err != nil {
		t.Fatal(err)
	}
	if v.Unwrap() != nil {
		t.Fatal("a backend that cannot resize in place was unwrapped")
	}
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

// resizableMem grows in place up to its mem backend's capacity.
type resizableMem struct {
	*mem.Backend
	blocks atomic.Uint64
	closed atomic.Bool
}

func (r *resizableMem) Blocks() uint64 { return r.blocks.Load() }
func (r *resizableMem) Resize(n uint64) error {
	if n > r.Backend.Blocks() {
		return blockdev.ErrOutOfRange
	}
	r.blocks.Store(n)
	return nil
}
func (r *resizableMem) Close() error { r.closed.Store(true); return r.Backend.Close() }

// TestVolumeBackendResizeInPlace: a backend that resizes in place is
// handed to the target (Unwrap) and grown by swap, which closes the
// re-opened copy; the target's backend never changes.
func TestVolumeBackendResizeInPlace(t *testing.T) {
	cur := &resizableMem{Backend: mem.New(64, 512)}
	cur.blocks.Store(8)
	v := newVolumeBackend(cur, nil)
	if v.Unwrap() != blockdev.Backend(cur) {
		t.Fatal("resizable backend not unwrapped")
	}
	reopened := &resizableMem{Backend: mem.New(32, 512)}
	reopened.blocks.Store(32)
	if err := v.swap(reopened); err != nil {
		t.Fatal(err)
	}
	if cur.Blocks() != 32 || v.Unwrap() != blockdev.Backend(cur) || !reopened.closed.Load() {
		t.Fatalf("after grow: %d blocks, unwrap %v, re-opened copy closed %v", cur.Blocks(), v.Unwrap() == blockdev.Backend(cur), reopened.closed.Load())
	}
	tooBig := &resizableMem{Backend: mem.New(128, 512)}
	tooBig.blocks.Store(128)
	if err := v.swap(tooBig); err == nil {
		t.Fatal("failed resize reported success")
	}
	if cur.Blocks() != 32 {
		t.Fatal(cur.Blocks())
	}
}

// BenchmarkVolumeMeterIO is the per-I/O metering the core calls: no
// allocation, no clock.
func BenchmarkVolumeMeterIO(b *testing.B) {
	v := newVolumeBackend(mem.New(8, 512), metrics.New().Volume("v"))
	s := target.IOSample{Op: target.OpRead, Bytes: 4096}
	b.ReportAllocs()
	for b.Loop() {
		v.MeterIO(s)
	}
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
