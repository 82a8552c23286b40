package replica

import (
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// recorder counts what reaches the replica's backend.
type recorder struct {
	blockdev.Backend
	writes, fua, flushes, zeroes, discards atomic.Int32
}

func (r *recorder) WriteAt(bufs [][]byte, lba uint64, f blockdev.WriteFlags) error {
	r.writes.Add(1)
	if f&blockdev.WriteFUA != 0 {
		r.fua.Add(1)
	}
	return r.Backend.WriteAt(bufs, lba, f)
}
func (r *recorder) Flush() error { r.flushes.Add(1); return r.Backend.Flush() }
func (r *recorder) WriteZeroes(lba, n uint64) error {
	r.zeroes.Add(1)
	return r.Backend.WriteZeroes(lba, n)
}
func (r *recorder) Discard(lba, n uint64) error { r.discards.Add(1); return r.Backend.Discard(lba, n) }

// TestFlushAndFUAReachReplica: Flush is an NVMe Flush at the replica, a
// FUA write (blocking and async) a write with FUA there, a plain write
// has no FUA, and Write Zeroes and Discard arrive as such.
func TestFlushAndFUAReachReplica(t *testing.T) {
	fabric := soft.NewFabric()
	rec := &recorder{Backend: mem.New(256, 4096)}
	l := openLeg(t, legConfig(fabric, newReplica(t, fabric, rec)))
	if err := l.WriteAt([][]byte{fill(4096, 1)}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if rec.writes.Load() != 1 || rec.fua.Load() != 0 {
		t.Fatalf("plain write: %d writes, %d FUA", rec.writes.Load(), rec.fua.Load())
	}
	if err := l.WriteAt([][]byte{fill(4096, 2)}, 1, blockdev.WriteFUA); err != nil {
		t.Fatal(err)
	}
	done := make(chanDone, 1)
	if !l.SubmitWrite(fill(4096, 3), 2, blockdev.WriteFUA, done) {
		t.Fatal("async write refused")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rec.fua.Load() != 2 {
		t.Fatalf("%d FUA writes at the replica, want 2", rec.fua.Load())
	}
	before := rec.flushes.Load()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rec.flushes.Load() != before+1 {
		t.Fatalf("Flush reached the replica %d times", rec.flushes.Load()-before)
	}
	if err := l.WriteZeroes(3, 4); err != nil {
		t.Fatal(err)
	}
	if err := l.Discard(8, 4); err != nil {
		t.Fatal(err)
	}
	if rec.zeroes.Load() != 1 || rec.discards.Load() != 1 {
		t.Fatalf("zeroes %d, discards %d at the replica", rec.zeroes.Load(), rec.discards.Load())
	}
}
