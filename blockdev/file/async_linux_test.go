package file

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
)

// chanDone is a blockdev.Completion that sends the result on a channel.
type chanDone chan error

func (c chanDone) IODone(err error) { c <- err }

func openAsync(t *testing.T, opts Options) *Backend {
	t.Helper()
	if opts.Size == 0 {
		opts.Size = 4 << 20
	}
	b, err := Open(filepath.Join(t.TempDir(), "async.img"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	if b.ring == nil {
		t.Skip("no io_uring fast path here (no O_DIRECT on the test filesystem, or no io_uring)")
	}
	return b
}

var _ blockdev.Async = (*Backend)(nil)

// TestAsyncReadWrite writes blocks through the fast path, FUA included,
// reads them back through it and through ReadAt.
func TestAsyncReadWrite(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096})
	const n = 64
	done := make(chanDone, n)
	bufs := make([][]byte, n)
	for i := range bufs {
		bufs[i] = AlignedBuffer(8192, 4096)
		for j := range bufs[i] {
			bufs[i][j] = byte(i + j*3)
		}
		fl := blockdev.WriteFlags(0)
		if i%8 == 0 {
			fl = blockdev.WriteFUA
		}
		if !b.SubmitWrite(bufs[i], uint64(i*2), fl, done) {
			t.Fatalf("SubmitWrite %d refused", i)
		}
	}
	for range n {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i := range bufs {
		back := AlignedBuffer(8192, 4096)
		if !b.SubmitRead(back, uint64(i*2), done) {
			t.Fatalf("SubmitRead %d refused", i)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, bufs[i]) {
			t.Fatalf("block %d differs (async)", i)
		}
		clear(back)
		if err := b.ReadAt([][]byte{back}, uint64(i*2)); err != nil || !bytes.Equal(back, bufs[i]) {
			t.Fatalf("block %d differs (ReadAt): %v", i, err)
		}
	}
	if st := b.Stats(); st.AsyncIOs != 2*n {
		t.Errorf("stats %+v: want %d async I/Os", st, 2*n)
	}
}

// TestAsyncRefuses: whatever the fast path cannot take returns false and
// leaves the I/O to ReadAt/WriteAt, which report errors properly.
func TestAsyncRefuses(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 512})
	done := make(chanDone, 16) // never blocks the reaper, even if a case wrongly submits
	al := AlignedBuffer(8192, 4096)
	cases := []struct {
		name string
		ok   bool
	}{
		{"misaligned memory", b.SubmitRead(al[1:1+4096], 0, done)},
		{"out of range", b.SubmitRead(al[:4096], b.Blocks(), done)},
		{"partial block", b.SubmitWrite(al[:100], 0, 0, done)},
		{"empty", b.SubmitRead(nil, 0, done)},
		{"nil completion", b.SubmitRead(al[:4096], 0, nil)},
	}
	for _, c := range cases {
		if c.ok {
			t.Errorf("%s: submitted", c.name)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if b.SubmitRead(al[:4096], 0, done) {
		t.Error("submitted after Close")
	}
	off, err := Open(filepath.Join(t.TempDir(), "off.img"), Options{Size: 1 << 20, RingEntries: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if off.SubmitRead(al[:4096], 0, done) {
		t.Error("submitted with RingEntries -1")
	}
	if len(done) != 0 {
		t.Errorf("%d unexpected completions", len(done))
	}
}

// TestAsyncCloseWaits: Close returns only after every submitted I/O has
// called IODone, and no IODone comes later.
func TestAsyncCloseWaits(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096, RingEntries: 16})
	var calls atomic.Int64
	cnt := countDone{&calls}
	submitted := 0
	for i := range 64 {
		if b.SubmitRead(AlignedBuffer(4096, 4096), uint64(i), cnt) {
			submitted++
		}
	}
	if submitted == 0 {
		t.Fatal("nothing submitted")
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := calls.Load(); got != int64(submitted) {
		t.Fatalf("%d IODone calls by Close, want %d", got, submitted)
	}
}

type countDone struct{ n *atomic.Int64 }

func (c countDone) IODone(error) { c.n.Add(1) }

// TestAsyncPlug: I/O submitted under a plug completes once unplugged;
// plugs nest.
func TestAsyncPlug(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096})
	done := make(chanDone, 8)
	b.Plug()
	b.Plug()
	for i := range 8 {
		if !b.SubmitRead(AlignedBuffer(4096, 4096), uint64(i), done) {
			t.Fatalf("SubmitRead %d refused", i)
		}
	}
	b.Unplug()
	b.Unplug()
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	b.Unplug() // unbalanced: harmless
}

// BenchmarkAsyncRead4K measures the io_uring fast path: 32 O_DIRECT 4 KiB
// reads in flight, submitted under a plug in batches as a queue poller
// does. allocs/op must be 0. The file is sparse, so this measures the
// submission and completion path (CPU per I/O), not the disk.
func BenchmarkAsyncRead4K(b *testing.B) { benchAsyncRead(b, 4096, false) }

// BenchmarkAsyncRead4KFixed is BenchmarkAsyncRead4K with the buffers
// registered as io_uring fixed buffers (READ_FIXED).
func BenchmarkAsyncRead4KFixed(b *testing.B) { benchAsyncRead(b, 4096, true) }

// BenchmarkAsyncRead128K and BenchmarkAsyncRead128KFixed: the same with
// 128 KiB reads, where the per-I/O page pinning that fixed buffers skip
// covers 32 pages.
func BenchmarkAsyncRead128K(b *testing.B)      { benchAsyncRead(b, 128<<10, false) }
func BenchmarkAsyncRead128KFixed(b *testing.B) { benchAsyncRead(b, 128<<10, true) }

func benchAsyncRead(b *testing.B, size int, fixed bool) {
	be, err := Open(filepath.Join(b.TempDir(), "bench.img"), Options{Size: 64 << 20, BlockSize: 4096})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	if be.ring == nil {
		b.Skip("no io_uring fast path here")
	}
	const depth = 32
	bufs := AlignedBuffer(depth*size, 4096)
	var reg blockdev.FixedRegion
	if fixed {
		if reg, err = be.RegisterFixed(bufs); err != nil {
			b.Skip(err)
		}
	}
	done := make(chanDone, depth)
	blocks := be.Blocks() - uint64(size/4096)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	inflight, next := 0, 0
	for i := 0; i < b.N; {
		be.Plug()
		for inflight < depth && i < b.N {
			buf := bufs[next*size : (next+1)*size]
			next = (next + 1) % depth
			if !be.SubmitReadFixed(buf, uint64(i*7919)%blocks, reg, done) {
				b.Fatal("refused")
			}
			inflight++
			i++
		}
		be.Unplug()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		inflight--
	}
	for ; inflight > 0; inflight-- {
		<-done
	}
	b.StopTimer()
	if st := be.Stats(); fixed && st.FixedIOs != uint64(b.N) {
		b.Fatalf("%d fixed I/Os of %d", st.FixedIOs, b.N)
	}
}
