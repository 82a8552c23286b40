package reconcile

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/metrics"
)

// volumeBackend is the blockdev.Backend the target sees for a volume: it
// forwards to the current file backend (swapped on resize) and meters
// every call.
type volumeBackend struct {
	cur   atomic.Pointer[backendRef]
	meter *metrics.VolumeMeter // nil: no metrics

	mu      sync.Mutex // guards retired
	retired []blockdev.Backend
}

// backendRef boxes an interface value for atomic.Pointer.
type backendRef struct{ b blockdev.Backend }

func newVolumeBackend(b blockdev.Backend, m *metrics.VolumeMeter) *volumeBackend {
	v := &volumeBackend{meter: m}
	v.cur.Store(&backendRef{b})
	return v
}

// swap installs a re-opened (larger) backend. The old one stays open until
// Close: commands that loaded it before the swap may still be using it.
func (v *volumeBackend) swap(b blockdev.Backend) {
	old := v.cur.Swap(&backendRef{b})
	v.mu.Lock()
	v.retired = append(v.retired, old.b)
	v.mu.Unlock()
}

func (v *volumeBackend) inner() blockdev.Backend { return v.cur.Load().b }

func (v *volumeBackend) observe(op metrics.Op, n int, start time.Time, err error) {
	if v.meter != nil {
		v.meter.Observe(op, n, start, err)
	}
}

func (v *volumeBackend) BlockSize() int { return v.inner().BlockSize() }
func (v *volumeBackend) Blocks() uint64 { return v.inner().Blocks() }

func bufLen(bufs [][]byte) int {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n
}

func (v *volumeBackend) ReadAt(bufs [][]byte, lba uint64) error {
	t := time.Now()
	err := v.inner().ReadAt(bufs, lba)
	v.observe(metrics.OpRead, bufLen(bufs), t, err)
	return err
}

func (v *volumeBackend) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	t := time.Now()
	err := v.inner().WriteAt(bufs, lba, f)
	v.observe(metrics.OpWrite, bufLen(bufs), t, err)
	return err
}

func (v *volumeBackend) Flush() error {
	t := time.Now()
	err := v.inner().Flush()
	v.observe(metrics.OpFlush, 0, t, err)
	return err
}

func (v *volumeBackend) WriteZeroes(lba, n uint64) error {
	t := time.Now()
	err := v.inner().WriteZeroes(lba, n)
	v.observe(metrics.OpWriteZeroes, 0, t, err)
	return err
}

func (v *volumeBackend) Discard(lba, n uint64) error {
	t := time.Now()
	err := v.inner().Discard(lba, n)
	v.observe(metrics.OpDiscard, 0, t, err)
	return err
}

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
