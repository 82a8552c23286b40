package reconcile

import (
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/target"
)

// volumeBackend is the handle the target gets for a volume. It adds
// nothing to the data path, so the core runs the volume's I/O on the file
// backend itself and keeps its fast paths (io_uring, fixed buffers):
//
//   - Unwrap (target.Unwrapper) hands the core the file backend when that
//     backend resizes in place (blockdev.Resizer): a resize then grows
//     the very backend the core uses, and swap only closes the re-opened
//     copy. A backend that cannot resize in place is not unwrapped; the
//     core then calls the methods below, and swap replaces it under the
//     live namespace through an atomic pointer (the slow path, kept for
//     such backends).
//   - MeterIO (target.IOMeter) receives every I/O command the core
//     completes on the volume's namespaces, with a sampled latency, and
//     counts it into metrics.VolumeMeter: no clock read per I/O.
type volumeBackend struct {
	cur   atomic.Pointer[backendRef]
	meter *metrics.VolumeMeter // nil: no metrics

	mu      sync.Mutex // guards retired
	retired []blockdev.Backend
}

var (
	_ target.Unwrapper = (*volumeBackend)(nil)
	_ target.IOMeter   = (*volumeBackend)(nil)
)

// backendRef boxes an interface value for atomic.Pointer.
type backendRef struct{ b blockdev.Backend }

func newVolumeBackend(b blockdev.Backend, m *metrics.VolumeMeter) *volumeBackend {
	v := &volumeBackend{meter: m}
	v.cur.Store(&backendRef{b})
	return v
}

// swap makes the volume as large as b, a re-opened (larger) backend of
// the same file. A backend that resizes in place is grown and b closed:
// the target keeps using the backend it unwrapped; if that resize fails
// the volume keeps its size and the error is returned. Otherwise b
// replaces the current backend, which stays open until Close: commands
// that loaded it before the swap may still be using it.
func (v *volumeBackend) swap(b blockdev.Backend) error {
	cur := v.inner()
	if rz, ok := cur.(blockdev.Resizer); ok {
		err := rz.Resize(b.Blocks())
		b.Close()
		return err
	}
	old := v.cur.Swap(&backendRef{b})
	v.mu.Lock()
	v.retired = append(v.retired, old.b)
	v.mu.Unlock()
	return nil
}

func (v *volumeBackend) inner() blockdev.Backend { return v.cur.Load().b }

// Unwrap implements target.Unwrapper: the file backend when it resizes in
// place (so the one the target uses never changes), else nil.
func (v *volumeBackend) Unwrap() blockdev.Backend {
	b := v.inner()
	if _, ok := b.(blockdev.Resizer); !ok {
		return nil
	}
	return b
}

// meterOps maps the core's operations to the metrics'.
var meterOps = [...]metrics.Op{
	target.OpRead:        metrics.OpRead,
	target.OpWrite:       metrics.OpWrite,
	target.OpFlush:       metrics.OpFlush,
	target.OpWriteZeroes: metrics.OpWriteZeroes,
	target.OpDeallocate:  metrics.OpDiscard,
}

// MeterIO implements target.IOMeter. Any goroutine; allocates nothing.
func (v *volumeBackend) MeterIO(s target.IOSample) {
	if v.meter == nil || int(s.Op) >= len(meterOps) {
		return
	}
	v.meter.Record(meterOps[s.Op], s.Bytes, s.Latency, s.Failed)
}

func (v *volumeBackend) BlockSize() int { return v.inner().BlockSize() }
func (v *volumeBackend) Blocks() uint64 { return v.inner().Blocks() }

func (v *volumeBackend) ReadAt(bufs [][]byte, lba uint64) error { return v.inner().ReadAt(bufs, lba) }

func (v *volumeBackend) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	return v.inner().WriteAt(bufs, lba, f)
}

func (v *volumeBackend) Flush() error                    { return v.inner().Flush() }
func (v *volumeBackend) WriteZeroes(lba, n uint64) error { return v.inner().WriteZeroes(lba, n) }
func (v *volumeBackend) Discard(lba, n uint64) error     { return v.inner().Discard(lba, n) }

// Close closes the current and every retired backend. The caller makes
// sure the target no longer uses the volume.
func (v *volumeBackend) Close() error {
	v.mu.Lock()
	bs := append(v.retired, v.inner())
	v.retired = nil
	v.mu.Unlock()
	var first error
	for _, b := range bs {
		if err := b.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
