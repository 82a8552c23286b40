package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/faulty"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// stepClock is a rate-limit clock whose Sleep lets the test's writers
// complete a few writes before the next region is copied (no lock is
// held while the resync sleeps), so the copy provably runs under live
// I/O; time advances by what was slept.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	writes *atomic.Int64
	stop   <-chan struct{}
	gone   <-chan struct{} // closed when every writer has returned (one failed)
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	want := c.writes.Load() + 8
	for c.writes.Load() < want {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.stop:
			return nil
		case <-c.gone:
			return nil // the writers failed: the test reports it
		default:
			time.Sleep(50 * time.Microsecond) // poll; not synchronisation (the loop's condition is)
		}
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// readAll returns b's whole content.
func readAll(t *testing.T, b blockdev.Backend) []byte {
	t.Helper()
	buf := make([]byte, int(b.Blocks())*b.BlockSize())
	if err := b.ReadAt([][]byte{buf}, 0); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestResyncAfterUncleanFailover: the new owner's copy (local) and two
// other in-sync copies differ in blocks that an unacknowledged write of
// the lost owner reached on some copies only — one remote holds a block
// the local copy lacks, the local copy holds one the other remote lacks.
// Resync, run while writers keep writing, leaves all three byte for byte
// identical, blocks nobody rewrote included, and the legs stay in sync.
func TestResyncAfterUncleanFailover(t *testing.T) {
	const bs, blocks = 512, 1024 // 16 KiB regions: 32 of them
	local, b, c := mem.New(blocks, bs), newAsyncLeg(mem.New(blocks, bs)), mem.New(blocks, bs)
	// The lost owner's last writes: block 100 reached b only, block 700
	// reached the new owner (local) only.
	if err := b.WriteAt([][]byte{pat(bs, bs, 100, 1)}, 100, 0); err != nil {
		t.Fatal(err)
	}
	if err := local.WriteAt([][]byte{pat(bs, bs, 700, 1)}, 700, 0); err != nil {
		t.Fatal(err)
	}
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), local, b, c)
	defer m.Close()
	if bytes.Equal(readAll(t, local), readAll(t, b)) {
		t.Fatal("setup: the copies do not differ")
	}

	// Writers own disjoint blocks (never 100 or 700), each rewriting its
	// own blocks in turn, through both the blocking and the async path.
	const writers = 4
	var writes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := make(doneChan, 1)
			for gen := uint64(2); ; gen++ {
				for lba := uint64(w); lba < blocks; lba += 37 * writers {
					if lba == 100 || lba == 700 {
						continue
					}
					select {
					case <-stop:
						return
					default:
					}
					p := pat(bs, bs, lba, gen)
					var err error
					if w%2 == 0 || !m.SubmitWrite(p, lba, 0, res) {
						err = m.WriteAt([][]byte{p}, lba, 0)
					} else {
						err = <-res
					}
					if err != nil {
						errs <- err
						return
					}
					writes.Add(1)
				}
			}
		}()
	}
	gone := make(chan struct{})
	go func() { wg.Wait(); close(gone) }()
	clk := &stepClock{now: time.Unix(1e9, 0), writes: &writes, stop: stop, gone: gone}
	before := writes.Load()
	err := m.Resync(context.Background(), mirror.RebuildOptions{BytesPerSecond: 64 << 10, Clock: clk})
	during := writes.Load() - before
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatalf("writer: %v", e)
	}
	if err != nil {
		t.Fatalf("Resync: %v", err)
	}
	if during < 8*31 {
		t.Fatalf("only %d writes completed during the resync; want the copy to run under live I/O", during)
	}
	want := readAll(t, local)
	for _, leg := range []blockdev.Backend{b, c} {
		if got := readAll(t, leg); !bytes.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("after Resync a remote copy differs from the local one at byte %d (block %d)", i, i/bs)
				}
			}
		}
	}
	for _, ls := range m.Legs() {
		if ls.State != mirror.InSync || ls.DirtyBytes != 0 {
			t.Fatalf("leg %s: %v with %d dirty bytes after Resync; want in sync, clean", ls.Name, ls.State, ls.DirtyBytes)
		}
	}
	p := m.ResyncProgress()
	if p.Running || p.Err != nil || p.Total != 2*blocks*bs || p.Done != p.Total || p.Finished.IsZero() || p.Rate <= 0 {
		t.Fatalf("progress %+v; want finished, %d of %d bytes", p, 2*blocks*bs, 2*blocks*bs)
	}
}

// TestResyncLegFails: a copy that fails a resync write is recorded
// faulted with every region dirty (its copy may differ anywhere, not
// only where it was written since), the other copy is still resynced,
// and Resync's error names the failed one.
func TestResyncLegFails(t *testing.T) {
	const bs, blocks = 512, 256
	local, good := mem.New(blocks, bs), mem.New(blocks, bs)
	bad := faulty.New(mem.New(blocks, bs))
	if err := local.WriteAt([][]byte{pat(bs, bs, 200, 1)}, 200, 0); err != nil {
		t.Fatal(err)
	}
	mb := &okMembership{}
	m := newMirror(t, mb, mirrorConfigSmall(), local, good, bad)
	defer m.Close()
	bad.Inject(faulty.Rule{Ops: faulty.OpWrite, LBA: 64, Blocks: 1, Times: 1})
	err := m.Resync(context.Background(), mirror.RebuildOptions{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(legName(2))) {
		t.Fatalf("Resync: %v; want an error naming %s", err, legName(2))
	}
	if !bytes.Equal(readAll(t, local), readAll(t, good)) {
		t.Fatal("the healthy copy was not resynced")
	}
	ls := m.Legs()[2]
	if ls.State != mirror.Faulted || ls.DirtyBytes != blocks*bs {
		t.Fatalf("failed leg: %v with %d dirty bytes; want faulted with all %d dirty", ls.State, ls.DirtyBytes, blocks*bs)
	}
	if m.Legs()[1].State != mirror.InSync {
		t.Fatal("the healthy copy left in-sync")
	}
	if err := m.Resync(context.Background(), mirror.RebuildOptions{}); err != nil {
		t.Fatalf("second Resync (the faulted leg is no longer in it): %v", err)
	}
}

// TestMayDiverge: a write that fails with ErrFenced after reaching the
// local leg leaves the in-sync legs possibly different: MayDiverge turns
// true (and stays so); successful writes and recorded faults do not.
func TestMayDiverge(t *testing.T) {
	const bs, blocks = 512, 64
	bad := faulty.New(mem.New(blocks, bs))
	m := newMirror(t, &failMembership{}, mirrorConfigSmall(), mem.New(blocks, bs), bad)
	defer m.Close()
	if err := m.WriteAt([][]byte{pat(bs, bs, 1, 1)}, 1, 0); err != nil || m.MayDiverge() {
		t.Fatalf("write: %v, MayDiverge %v", err, m.MayDiverge())
	}
	bad.Inject(faulty.Rule{Ops: faulty.OpWrite, Times: 1})
	if err := m.WriteAt([][]byte{pat(bs, bs, 2, 1)}, 2, 0); !errors.Is(err, mirror.ErrFenced) {
		t.Fatalf("write failing on an unrecordable leg: %v", err)
	}
	if !m.MayDiverge() {
		t.Fatal("MayDiverge false after a write failed (fenced) having reached the local leg")
	}
}
