package file

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
)

// privateGroup makes a ring group for one test, closed when it ends
// (after the test's backends: cleanups run last-registered first).
func privateGroup(t testing.TB, opts GroupOptions) *RingGroup {
	t.Helper()
	g, err := NewRingGroup(opts)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Errorf("RingGroup.Close: %v", err)
		}
	})
	return g
}

// TestSharedRingRouting: many volumes on one ring write and read through
// the fast path at once; every completion reaches the volume and the
// Completion that submitted it, and each volume holds its own data.
func TestSharedRingRouting(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1, Entries: 64})
	const vols, ios = 8, 32
	dir := t.TempDir()
	bes := make([]*Backend, vols)
	for i := range bes {
		bes[i] = mustOpen(t, filepath.Join(dir, fmt.Sprint(i)), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
		if bes[i].ring == nil {
			t.Skip("no io_uring fast path here")
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, vols)
	for v, b := range bes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chanDone, ios)
			bufs := make([][]byte, ios)
			for i := range bufs {
				bufs[i] = AlignedBuffer(4096, 4096)
				fill(bufs[i], byte(v*ios+i))
				b.Plug()
				for !b.SubmitWrite(bufs[i], uint64(i), 0, done) {
					// Ring shared by 8 volumes may be full: the blocking
					// path takes it, as a queue would.
					if err := b.WriteAt([][]byte{bufs[i]}, uint64(i), 0); err != nil {
						errs <- err
						return
					}
					done <- nil
					break
				}
				b.Unplug()
			}
			for range ios {
				if err := <-done; err != nil {
					errs <- err
					return
				}
			}
			for i := range bufs {
				got := AlignedBuffer(4096, 4096)
				if !b.SubmitRead(got, uint64(i), done) {
					if err := b.ReadAt([][]byte{got}, uint64(i)); err != nil {
						errs <- err
						return
					}
				} else if err := <-done; err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, bufs[i]) {
					errs <- fmt.Errorf("volume %d block %d: wrong data", v, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var async uint64
	for _, b := range bes {
		async += b.Stats().AsyncIOs
	}
	if async == 0 {
		t.Error("no I/O took the shared ring")
	}
}

// TestSharedRingPlug: a volume's plug holds back only its own
// submissions' io_uring_enter; another volume on the ring completes I/O
// meanwhile, and the plugged volume's I/O completes by its Unplug.
func TestSharedRingPlug(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1})
	dir := t.TempDir()
	a := mustOpen(t, filepath.Join(dir, "a"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	b := mustOpen(t, filepath.Join(dir, "b"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	if a.ring == nil || a.ring != b.ring {
		t.Skip("no shared fast path here")
	}
	da, db := make(chanDone, 1), make(chanDone, 1)
	a.Plug()
	if !a.SubmitRead(AlignedBuffer(4096, 4096), 0, da) {
		t.Fatal("a refused")
	}
	if !b.SubmitRead(AlignedBuffer(4096, 4096), 0, db) {
		t.Fatal("b refused")
	}
	if err := <-db; err != nil {
		t.Fatal(err)
	}
	a.Unplug()
	if err := <-da; err != nil {
		t.Fatal(err)
	}
	// A plug left behind by a closed volume does not hold the ring back.
	a.Plug()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !b.SubmitRead(AlignedBuffer(4096, 4096), 0, db) {
		t.Fatal("b refused after a closed")
	}
	if err := <-db; err != nil {
		t.Fatal(err)
	}
	if n := a.ring.plugged; n != 0 {
		t.Fatalf("ring still counts %d plugged volumes", n)
	}
}

// TestFixedSharedAcrossVolumes: two volumes on one ring registering the
// same memory share its table entry; one unregistering or closing leaves
// the other's fixed I/O working, and the entry is freed with the last.
func TestFixedSharedAcrossVolumes(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1, FixedEntries: 4})
	dir := t.TempDir()
	a := mustOpen(t, filepath.Join(dir, "a"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	b := mustOpen(t, filepath.Join(dir, "b"), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
	if a.ring == nil || a.ring != b.ring {
		t.Skip("no shared fast path here")
	}
	region := AlignedBuffer(8*4096, 4096)
	ra, err := a.RegisterFixed(region)
	if err != nil {
		t.Skipf("no fixed buffers here: %v", err)
	}
	rb, err := b.RegisterFixed(region)
	if err != nil {
		t.Fatal(err)
	}
	used := func() (n int) {
		for _, u := range a.ring.fixed.used {
			if u {
				n++
			}
		}
		return n
	}
	if used() != 1 {
		t.Fatalf("%d table entries for one region registered twice", used())
	}
	if ra != rb {
		t.Fatalf("identical regions got different handles %x %x", ra, rb)
	}
	// A handle b does not hold is ignored by b.
	other, err := a.RegisterFixed(region[:4096])
	if err != nil {
		t.Fatal(err)
	}
	b.UnregisterFixed(other)
	if used() != 2 {
		t.Fatalf("b dropped a's registration: %d entries", used())
	}
	a.UnregisterFixed(other)
	a.UnregisterFixed(ra)
	a.UnregisterFixed(ra) // a holds it no more: ignored
	done := make(chanDone, 1)
	if !b.SubmitReadFixed(region[:4096], 0, rb, done) {
		t.Fatal("refused")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.FixedIOs != 1 || st.FixedRegions != 1 {
		t.Fatalf("b after a unregistered: %+v, want 1 fixed I/O, 1 region", st)
	}
	if st := a.Stats(); st.FixedRegions != 0 {
		t.Fatalf("a: %d regions", st.FixedRegions)
	}
	b.UnregisterFixed(rb)
	if used() != 0 {
		t.Fatalf("%d entries after both unregistered", used())
	}
	// Register again from both, close both: the entry is freed.
	if _, err := a.RegisterFixed(region); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RegisterFixed(region); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if used() != 1 {
		t.Fatalf("%d entries after a closed, want 1 (b still holds it)", used())
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if used() != 0 {
		t.Fatalf("%d entries after both closed", used())
	}
}

// TestRingGroupClose: a group in use refuses Close; a closed group gives
// new backends no fast path.
func TestRingGroupClose(t *testing.T) {
	g, err := NewRingGroup(GroupOptions{Rings: 2, Entries: 8})
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	if g.Rings() != 2 {
		t.Fatalf("%d rings", g.Rings())
	}
	b, err := Open(filepath.Join(t.TempDir(), "v"), Options{Size: 1 << 20, Rings: g})
	if err != nil {
		t.Fatal(err)
	}
	if b.ring != nil {
		if err := g.Close(); !errors.Is(err, ErrGroupBusy) {
			t.Fatalf("Close with a backend open: %v", err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(filepath.Join(t.TempDir(), "w"), Options{Size: 1 << 20, Rings: g})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ring != nil || b.SubmitRead(AlignedBuffer(4096, 4096), 0, make(chanDone, 1)) {
		t.Fatal("fast path on a closed group")
	}
}

// procCounts returns this process's OS threads and open descriptors.
func procCounts(t testing.TB) (threads, fds int) {
	t.Helper()
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			threads, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return threads, len(ents)
}

// openVolumes opens n file volumes on g (nil: the default group), each
// doing one fast-path read so that its ring is really in use.
func openVolumes(t testing.TB, dir string, n int, g *RingGroup) []*Backend {
	t.Helper()
	bes := make([]*Backend, 0, n)
	buf := AlignedBuffer(4096, 4096)
	done := make(chanDone, 1)
	for i := range n {
		b, err := Open(filepath.Join(dir, fmt.Sprint(i)), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
		if err != nil {
			for _, b := range bes {
				b.Close()
			}
			t.Fatalf("volume %d: %v", i, err)
		}
		bes = append(bes, b)
		if b.SubmitRead(buf, 0, done) {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	return bes
}

func closeVolumes(t testing.TB, bes []*Backend) {
	for _, b := range bes {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestVolumesShareRings: 200 file volumes doing aligned I/O add no OS
// thread and one descriptor each (the O_DIRECT one; the buffered one
// opens only at a misaligned I/O); the rings are the group's, not the
// volumes'. (Before shared rings, each volume added a ring descriptor, a
// buffered descriptor and a thread blocked in io_uring_enter.)
func TestVolumesShareRings(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 2})
	dir := t.TempDir()
	first := openVolumes(t, dir, 1, g)
	defer closeVolumes(t, first)
	if first[0].ring == nil {
		t.Skip("no io_uring fast path here")
	}
	th1, fd1 := procCounts(t)
	const n = 200
	more := openVolumes(t, t.TempDir(), n-1, g)
	defer closeVolumes(t, more)
	thN, fdN := procCounts(t)
	t.Logf("1 volume: %d threads, %d fds; %d volumes: %d threads, %d fds", th1, fd1, n, thN, fdN)
	if fdN-fd1 > n-1 {
		t.Errorf("%d more descriptors for %d more volumes: more than one per file", fdN-fd1, n-1)
	}
	// The Go runtime may start a few threads for blocking system calls
	// (open, fstat) under load; a thread per volume would be 199.
	if thN-th1 > 16 {
		t.Errorf("%d more OS threads for %d more volumes", thN-th1, n-1)
	}
}

// TestManyVolumes reports threads and descriptors for 1, 500 and 5,000
// file volumes on the default ring group. Slow (5,000 files): run with
// RDMABLK_MANY_VOLUMES=1, e.g.
//
//	RDMABLK_MANY_VOLUMES=1 go test -run=TestManyVolumes -v ./blockdev/file/
func TestManyVolumes(t *testing.T) {
	if os.Getenv("RDMABLK_MANY_VOLUMES") == "" {
		t.Skip("set RDMABLK_MANY_VOLUMES=1 to open 5,000 volumes")
	}
	g, err := DefaultRingGroup()
	if err != nil {
		t.Skip(err)
	}
	th0, fd0 := procCounts(t)
	t.Logf("before: %d threads, %d fds; default group has %d rings", th0, fd0, g.Rings())
	dir := t.TempDir()
	var all []*Backend
	defer func() { closeVolumes(t, all) }()
	for _, n := range []int{1, 500, 5000} {
		for len(all) < n {
			sub := filepath.Join(dir, fmt.Sprint(len(all)))
			if err := os.MkdirAll(sub, 0o700); err != nil {
				t.Fatal(err)
			}
			all = append(all, openVolumes(t, sub, min(500, n-len(all)), nil)...)
		}
		th, fd := procCounts(t)
		t.Logf("%5d volumes: %4d threads, %6d fds (%.2f fds per volume above the start)", n, th, fd, float64(fd-fd0)/float64(n))
	}
}

var _ blockdev.FixedBuffers = (*Backend)(nil)

// TestAsyncNoAllocs: a fast-path read on a shared ring, submission and
// completion (the reaper included), allocates nothing.
func TestAsyncNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	b := openAsync(t, Options{BlockSize: 4096})
	buf := AlignedBuffer(4096, 4096)
	done := make(chanDone, 1)
	allocs := testing.AllocsPerRun(200, func() {
		if !b.SubmitRead(buf, 3, done) {
			t.Fatal("refused")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per fast-path read", allocs)
	}
}

// TestBufferedReopen: the buffered descriptor opens at the first
// misaligned I/O, from the O_DIRECT one, so it reaches the same file even
// after the path was renamed away, and Close closes it.
func TestBufferedReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v")
	b := mustOpen(t, path, Options{Size: 1 << 20, BlockSize: 512})
	if b.dfd < 0 {
		t.Skip("no O_DIRECT here")
	}
	if b.buf.Load() >= 0 {
		t.Fatal("buffered descriptor open before any misaligned I/O")
	}
	if err := os.Rename(path, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o600); err != nil { // an impostor at the old path
		t.Fatal(err)
	}
	p := AlignedBuffer(4096+512, 4096)[1 : 1+512] // misaligned memory: buffered path
	fill(p, 9)
	if err := b.WriteAt([][]byte{p}, 3, 0); err != nil {
		t.Fatal(err)
	}
	if b.buf.Load() < 0 {
		t.Fatal("misaligned write did not open the buffered descriptor")
	}
	got, err := os.ReadFile(filepath.Join(dir, "moved"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[3*512:4*512], p) {
		t.Fatal("buffered write did not reach the volume's file")
	}
	if imp, _ := os.ReadFile(path); !bytes.Equal(imp, make([]byte, 1<<20)) {
		t.Fatal("buffered write went to the file now at the old path")
	}
	_, fd0 := procCounts(t)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, fd1 := procCounts(t); fd0-fd1 != 2 {
		t.Fatalf("Close released %d descriptors, want 2", fd0-fd1)
	}
}

// TestConfigureDefaultRingGroup: the default group's options can be set
// only before it exists.
func TestConfigureDefaultRingGroup(t *testing.T) {
	if _, err := DefaultRingGroup(); err != nil {
		t.Skip(err)
	}
	if err := ConfigureDefaultRingGroup(GroupOptions{Rings: 1}); !errors.Is(err, ErrGroupConfigured) {
		t.Fatalf("ConfigureDefaultRingGroup after creation = %v", err)
	}
}

// TestSharedRingNoLostCompletion: volumes on one shared ring, each driven
// by its own goroutine as the target's queues drive theirs, plug, submit
// a burst of 1-8 reads and writes, unplug, and wait for the burst before
// the next, so the ring goes idle after each: a completion that is
// neither reaped inline (paused eventfd) nor signalled to the reaper
// would never be found. Half of them wait by polling (Poll, as a poll
// group does), half by blocking. Every completion comes; a lost one fails
// the test after lostAfter instead of hanging it.
func TestSharedRingNoLostCompletion(t *testing.T) {
	g := privateGroup(t, GroupOptions{Rings: 1})
	dir := t.TempDir()
	const workers, bursts, lostAfter = 4, 300, 20 * time.Second
	vols := make([]*Backend, workers)
	for w := range vols {
		vols[w] = mustOpen(t, filepath.Join(dir, strconv.Itoa(w)), Options{Size: 1 << 20, BlockSize: 4096, Rings: g})
		if vols[w].ring == nil || vols[w].ring != vols[0].ring {
			t.Skip("no shared fast path here")
		}
	}
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w, b := range vols {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			done := make(chanDone, 8)
			var bufs [8][]byte
			for i := range bufs {
				bufs[i] = AlignedBuffer(4096, 4096)
			}
			for i := range bursts {
				k := 1 + rng.IntN(len(bufs))
				b.Plug()
				for j := range k {
					lba := uint64(rng.IntN(256))
					var ok bool
					if rng.IntN(2) == 0 {
						ok = b.SubmitWrite(bufs[j], lba, 0, done)
					} else {
						ok = b.SubmitRead(bufs[j], lba, done)
					}
					if !ok {
						b.Unplug()
						errs <- fmt.Errorf("volume %d, burst %d: I/O %d refused", w, i, j)
						return
					}
				}
				b.Unplug()
				// Polling volumes look between Polls, the others block.
				poll := w%2 == 1
				deadline := time.Now().Add(lostAfter)
				timeout := time.After(lostAfter)
				for got := 0; got < k; {
					var err error
					if poll {
						select {
						case err = <-done:
						default:
							b.Poll()
							runtime.Gosched()
							if time.Now().After(deadline) {
								errs <- fmt.Errorf("volume %d, burst %d: %d of %d completions lost (polling)", w, i, k-got, k)
								return
							}
							continue
						}
					} else {
						select {
						case err = <-done:
						case <-timeout:
							errs <- fmt.Errorf("volume %d, burst %d: %d of %d completions lost", w, i, k-got, k)
							return
						}
					}
					if err != nil {
						errs <- err
						return
					}
					got++
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
