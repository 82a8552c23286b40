package file

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// TestFixedReadWrite registers a region, moves data through
// SubmitWriteFixed / SubmitReadFixed on buffers inside it (fixed ops),
// and on a buffer outside it (plain ops), then unregisters: the gauge
// drops, the stale handle falls back to plain ops, and the table entries
// are reused.
func TestFixedReadWrite(t *testing.T) {
	const tableSize = 16
	b := openAsync(t, Options{BlockSize: 4096, Rings: privateGroup(t, GroupOptions{Rings: 1, FixedEntries: tableSize})})
	region := AlignedBuffer(2*tableSize*4096, 4096)
	reg, err := b.RegisterFixed(region)
	if err != nil {
		t.Skipf("no fixed buffers here: %v", err)
	}
	if reg == 0 {
		t.Fatal("zero handle")
	}
	if st := b.Stats(); st.FixedRegions != 1 {
		t.Fatalf("FixedRegions %d, want 1", st.FixedRegions)
	}
	done := make(chanDone, 1)
	io := func(write bool, buf []byte, lba uint64, r blockdev.FixedRegion) {
		t.Helper()
		var ok bool
		if write {
			ok = b.SubmitWriteFixed(buf, lba, blockdev.WriteFUA, r, done)
		} else {
			ok = b.SubmitReadFixed(buf, lba, r, done)
		}
		if !ok {
			t.Fatal("refused")
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	src := region[4*4096 : 6*4096]
	for i := range src {
		src[i] = byte(i * 7)
	}
	want := bytes.Clone(src)
	io(true, src, 10, reg)
	dst := region[8*4096 : 10*4096]
	io(false, dst, 10, reg)
	if !bytes.Equal(dst, want) {
		t.Fatal("fixed read differs")
	}
	outside := AlignedBuffer(2*4096, 4096)
	io(false, outside, 10, reg) // not in the region: plain READ
	if !bytes.Equal(outside, want) {
		t.Fatal("plain read differs")
	}
	st := b.Stats()
	if st.AsyncIOs != 3 || st.FixedIOs != 2 {
		t.Fatalf("stats %+v: want 3 async, 2 fixed", st)
	}
	b.UnregisterFixed(reg)
	b.UnregisterFixed(reg) // stale: ignored
	if st := b.Stats(); st.FixedRegions != 0 {
		t.Fatalf("FixedRegions %d after Unregister", st.FixedRegions)
	}
	io(false, dst, 10, reg) // stale handle: plain READ
	if st := b.Stats(); st.AsyncIOs != 4 || st.FixedIOs != 2 {
		t.Fatalf("stats %+v after Unregister: want 4 async, 2 fixed", st)
	}
	// The table's entries come back: register and drop it many times.
	for range 2 * tableSize {
		r, err := b.RegisterFixed(region)
		if err != nil {
			t.Fatal(err)
		}
		b.UnregisterFixed(r)
	}
	// The same memory registered again shares its entry.
	r1, err1 := b.RegisterFixed(region[:4096])
	r2, err2 := b.RegisterFixed(region[:4096])
	if err1 != nil || err2 != nil || r1 != r2 {
		t.Fatalf("same region twice: %v %v, %v %v", r1, err1, r2, err2)
	}
	if st := b.Stats(); st.FixedRegions != 2 {
		t.Fatalf("FixedRegions %d, want 2", st.FixedRegions)
	}
	b.UnregisterFixed(r1)
	b.UnregisterFixed(r2)
	// A full table refuses with ErrFixedUnavailable.
	var regs []blockdev.FixedRegion
	for i := 0; ; i++ {
		if i == len(region)/4096 {
			t.Fatalf("table never full: %d regions", i)
		}
		r, err := b.RegisterFixed(region[i*4096 : (i+1)*4096])
		if err != nil {
			if !errors.Is(err, blockdev.ErrFixedUnavailable) {
				t.Fatal(err)
			}
			break
		}
		regs = append(regs, r)
	}
	if len(regs) != tableSize {
		t.Fatalf("%d registrations fit, want %d", len(regs), tableSize)
	}
	for _, r := range regs {
		b.UnregisterFixed(r)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b.UnregisterFixed(reg) // after Close: ignored
	if _, err := b.RegisterFixed(region); !errors.Is(err, blockdev.ErrFixedUnavailable) {
		t.Fatalf("RegisterFixed after Close: %v", err)
	}
}

// TestFixedRefused: when the kernel refuses the memory (RLIMIT_MEMLOCK →
// ENOMEM, EPERM) RegisterFixed reports ErrFixedUnavailable with the errno
// and I/O keeps working through plain ops; a refused table disables fixed
// buffers on the ring for good.
func TestFixedRefused(t *testing.T) {
	b := openAsync(t, Options{BlockSize: 4096, Rings: privateGroup(t, GroupOptions{Rings: 1})})
	defer func(f func(*uring.Ring, int, []byte) error) { updateBuffer = f }(updateBuffer)
	updateBuffer = func(*uring.Ring, int, []byte) error { return syscall.ENOMEM }
	region := AlignedBuffer(4096, 4096)
	reg, err := b.RegisterFixed(region)
	if !errors.Is(err, blockdev.ErrFixedUnavailable) || !errors.Is(err, syscall.ENOMEM) {
		t.Skipf("RegisterFixed: %v (want ENOMEM; no sparse tables here?)", err)
	}
	done := make(chanDone, 1)
	if !b.SubmitReadFixed(region, 0, reg, done) {
		t.Fatal("refused")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.AsyncIOs != 1 || st.FixedIOs != 0 || st.FixedRegions != 0 {
		t.Fatalf("stats %+v", st)
	}

	b2 := openAsync(t, Options{BlockSize: 4096, Rings: privateGroup(t, GroupOptions{Rings: 1})})
	defer func(f func(*uring.Ring, int) error) { registerSparse = f }(registerSparse)
	calls := 0
	registerSparse = func(*uring.Ring, int) error { calls++; return syscall.EPERM }
	for range 2 {
		if _, err := b2.RegisterFixed(region); !errors.Is(err, syscall.EPERM) {
			t.Fatalf("RegisterFixed: %v, want EPERM", err)
		}
	}
	if calls != 1 {
		t.Fatalf("sparse table tried %d times, want once", calls)
	}
}
