package file

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/rdmablk/rdmablk/blockdev"
)

func mustOpen(t *testing.T, path string, opts Options) *Backend {
	t.Helper()
	b, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s, %+v): %v", path, opts, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func fill(p []byte, seed byte) []byte {
	for i := range p {
		p[i] = seed + byte(i*7) + byte(i>>9)
	}
	return p
}

func TestAlignedBuffer(t *testing.T) {
	for _, c := range []struct{ size, align int }{{0, 512}, {1, 512}, {4096, 4096}, {100, 3}, {10, 0}, {65536, 65536}} {
		p := AlignedBuffer(c.size, c.align)
		want := c.align
		if want <= 0 {
			want = 4096
		}
		if len(p) != c.size || cap(p) != c.size {
			t.Errorf("AlignedBuffer(%d, %d): len %d cap %d", c.size, c.align, len(p), cap(p))
		}
		if c.size > 0 && uintptr(unsafe.Pointer(&p[0]))%uintptr(want) != 0 {
			t.Errorf("AlignedBuffer(%d, %d) is not aligned", c.size, c.align)
		}
	}
	if AlignedBuffer(-1, 512) != nil {
		t.Error("AlignedBuffer(-1) != nil")
	}
}

func TestOpenSizing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v")

	// Missing file, no size: nothing to create.
	if _, err := Open(path, Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, Size 0) = %v, want ErrNotExist", err)
	}
	// Created sparse at Size, not a multiple of the block size: the tail
	// is not served.
	b := mustOpen(t, path, Options{Size: 1<<20 + 100, BlockSize: 4096})
	if b.Blocks() != 256 || b.BlockSize() != 4096 {
		t.Fatalf("geometry %d x %d, want 256 x 4096", b.Blocks(), b.BlockSize())
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != 1<<20+100 || st.Blocks*512 >= 1<<20 {
		t.Fatalf("file size %d, %d bytes allocated: want sparse 1 MiB+100", st.Size, st.Blocks*512)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	// Size 0: the existing size, default block size 512.
	b = mustOpen(t, path, Options{})
	if b.Blocks() != (1<<20+100)/512 || b.BlockSize() != 512 {
		t.Fatalf("existing file: %d x %d", b.Blocks(), b.BlockSize())
	}
	b.Close()

	// Smaller Size than the file: the file is left alone, Size is served.
	b = mustOpen(t, path, Options{Size: 64 << 10})
	if b.Blocks() != 128 {
		t.Fatalf("Size below file size: %d blocks, want 128", b.Blocks())
	}
	b.Close()
	if err := syscall.Stat(path, &st); err != nil || st.Size != 1<<20+100 {
		t.Fatalf("file changed to %d bytes (%v)", st.Size, err)
	}

	// Grown when Size is larger; read-only cannot grow.
	if _, err := Open(path, Options{Size: 4 << 20, ReadOnly: true}); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("read-only grow: %v, want ErrTooSmall", err)
	}
	b = mustOpen(t, path, Options{Size: 2 << 20})
	if b.Blocks() != 4096 {
		t.Fatalf("grown: %d blocks", b.Blocks())
	}
	b.Close()

	// Less than one block.
	tiny := filepath.Join(dir, "tiny")
	if err := os.WriteFile(tiny, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(tiny, Options{}); !errors.Is(err, ErrTooSmall) {
		t.Fatalf("tiny file: %v, want ErrTooSmall", err)
	}
}

func TestOpenRejects(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v")
	for _, o := range []Options{
		{Size: -1},
		{Size: 1 << 20, BlockSize: 1000},
		{Size: 1 << 20, BlockSize: 256},
		{Size: 1 << 20, BlockSize: 128 << 10},
		{Size: 1 << 20, Direct: DirectMode(7)},
	} {
		if _, err := Open(path, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Open(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrUnsupportedFile) {
		t.Errorf("Open(directory) = %v, want ErrUnsupportedFile", err)
	}
	if _, err := Open("/dev/null", Options{}); !errors.Is(err, ErrUnsupportedFile) {
		t.Errorf("Open(/dev/null) = %v, want ErrUnsupportedFile", err)
	}
	if DirectOn.String() != "on" || DirectAuto.String() != "auto" || DirectOff.String() != "off" || DirectMode(9).String() != "DirectMode(9)" {
		t.Error("DirectMode.String")
	}
}

func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v")
	w := mustOpen(t, path, Options{Size: 64 << 10})
	data := fill(AlignedBuffer(4096, 4096), 3)
	if err := w.WriteAt([][]byte{data}, 8, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, path, Options{ReadOnly: true})
	if !b.ReadOnly() {
		t.Fatal("ReadOnly() = false")
	}
	got := AlignedBuffer(4096, 4096)
	if err := b.ReadAt([][]byte{got}, 8); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read-only ReadAt: %v, equal %v", err, bytes.Equal(got, data))
	}
	for name, err := range map[string]error{
		"WriteAt":     b.WriteAt([][]byte{data}, 0, 0),
		"FUA WriteAt": b.WriteAt([][]byte{data}, 0, blockdev.WriteFUA),
		"WriteZeroes": b.WriteZeroes(0, 1),
		"Discard":     b.Discard(0, 1),
	} {
		if !errors.Is(err, blockdev.ErrReadOnly) {
			t.Errorf("%s on read-only: %v", name, err)
		}
	}
	// Range errors still win over read-only, so the target reports the
	// more specific status.
	if err := b.WriteAt([][]byte{data}, b.Blocks(), 0); !errors.Is(err, blockdev.ErrOutOfRange) {
		t.Errorf("out-of-range write on read-only: %v", err)
	}
	if err := b.Flush(); err != nil {
		t.Errorf("Flush on read-only: %v", err)
	}
}

// directBackend opens a 1 MiB file with O_DIRECT or skips.
func directBackend(t *testing.T, bs int) *Backend {
	t.Helper()
	path := filepath.Join(t.TempDir(), "v")
	b, err := Open(path, Options{Size: 1 << 20, BlockSize: bs, Direct: DirectOn})
	if errors.Is(err, ErrDirectUnsupported) {
		t.Skip("no O_DIRECT on the temp dir's filesystem")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestDirectPathSelection(t *testing.T) {
	b := directBackend(t, 512)
	align := b.DirectAlign()
	t.Logf("direct alignment %d", align)
	if align < 1 || align&(align-1) != 0 {
		t.Fatalf("DirectAlign() = %d", align)
	}
	big := AlignedBuffer(64<<10, 4096)
	fill(big, 1)
	lbaAligned := uint64(4096 / 512) // 4096-byte offset
	misLBA := uint64(align/512) + 1  // offset align+512: misaligned for align >= 1024
	cases := []struct {
		name   string
		bufs   [][]byte
		lba    uint64
		direct bool
	}{
		{"aligned single", [][]byte{big[:4096]}, lbaAligned, true},
		{"aligned vector", [][]byte{big[:4096], big[8192 : 8192+4096]}, lbaAligned, true},
		{"misaligned address", [][]byte{big[1 : 1+4096]}, lbaAligned, false},
		{"misaligned length in vector", [][]byte{big[:256], big[4096 : 4096+256]}, lbaAligned, false},
		{"misaligned address in vector", [][]byte{big[:4096], big[4097 : 4097+4096]}, lbaAligned, false},
	}
	if align >= 1024 {
		cases = append(cases, struct {
			name   string
			bufs   [][]byte
			lba    uint64
			direct bool
		}{"misaligned offset", [][]byte{big[:4096]}, misLBA, false})
	}
	for i, c := range cases {
		for _, write := range []bool{true, false} {
			before := b.Stats()
			var err error
			if write {
				for _, p := range c.bufs {
					fill(p, byte(i+10))
				}
				err = b.WriteAt(c.bufs, c.lba, 0)
			} else {
				err = b.ReadAt(c.bufs, c.lba)
			}
			if err != nil {
				t.Fatalf("%s (write %v): %v", c.name, write, err)
			}
			after := b.Stats()
			gotDirect := after.DirectIOs - before.DirectIOs
			gotBuffered := after.BufferedIOs - before.BufferedIOs
			if c.direct && (gotDirect != 1 || gotBuffered != 0) || !c.direct && (gotDirect != 0 || gotBuffered != 1) {
				t.Errorf("%s (write %v): %d direct, %d buffered; want direct=%v", c.name, write, gotDirect, gotBuffered, c.direct)
			}
		}
		// Read back through the other path and compare.
		want := bytes.Join(c.bufs, nil)
		got := AlignedBuffer(len(want), 4096)
		var err error
		if c.direct {
			err = b.ReadAt([][]byte{got[:256], got[256:]}, c.lba) // buffered
		} else {
			err = b.ReadAt([][]byte{got}, c.lba) // direct if the offset allows
		}
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: read back through the other path: err %v, equal %v", c.name, err, bytes.Equal(got, want))
		}
	}
}

// TestDirectRefusedByKernel checks the fallback when the kernel refuses
// an I/O on the O_DIRECT descriptor with EINVAL. This host's kernel
// accepts misaligned segments, so the refusal is provoked with a byte
// offset beyond 2^63 (negative as off_t), which every descriptor refuses:
// the direct attempt must be redone on the buffered descriptor, whose
// EINVAL is then returned rather than retried.
func TestDirectRefusedByKernel(t *testing.T) {
	b := directBackend(t, 512)
	b.blocks.Store(1 << 55) // white box: breaks Open's invariant that offsets fit an int64
	p := AlignedBuffer(4096, 4096)
	for name, err := range map[string]error{
		"read":  b.ReadAt([][]byte{p}, 1<<54),
		"write": b.WriteAt([][]byte{p}, 1<<54, 0),
	} {
		if !errors.Is(err, syscall.EINVAL) {
			t.Errorf("%s: %v, want EINVAL", name, err)
		}
	}
	if s := b.Stats(); s.DirectRefused != 2 || s.DirectIOs != 2 {
		t.Fatalf("stats %+v, want 2 direct I/Os, both refused", s)
	}
}

// TestDirectMisalignedSegments records this host's behaviour that
// makes our own alignment checks necessary: with a claimed alignment of 1,
// 100-byte pieces go to the O_DIRECT descriptor, and whatever the kernel
// does with them (accept, or refuse so that we redo them buffered) the
// data must come back intact.
func TestDirectMisalignedSegments(t *testing.T) {
	b := directBackend(t, 512)
	b.align = 1
	p := fill(AlignedBuffer(1024, 4096), 5)
	if err := b.WriteAt([][]byte{p[:100], p[100:512], p[512:]}, 3, 0); err != nil {
		t.Fatal(err)
	}
	got := AlignedBuffer(1024, 4096)
	if err := b.ReadAt([][]byte{got[:100], got[100:]}, 3); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, p) {
		t.Fatal("data differs")
	}
	t.Logf("stats %+v", b.Stats())
}

// TestDirectAutoWhenRefused simulates a filesystem that fails O_DIRECT
// opens with EINVAL.
func TestDirectAutoWhenRefused(t *testing.T) {
	openFile = func(path string, mode int, perm uint32) (int, error) {
		if mode&syscall.O_DIRECT != 0 {
			return -1, syscall.EINVAL
		}
		return syscall.Open(path, mode, perm)
	}
	t.Cleanup(func() { openFile = syscall.Open })
	path := filepath.Join(t.TempDir(), "v")
	if _, err := Open(path, Options{Size: 1 << 20, Direct: DirectOn}); !errors.Is(err, ErrDirectUnsupported) {
		t.Fatalf("DirectOn on a refusing filesystem: %v", err)
	}
	b := mustOpen(t, path, Options{Size: 1 << 20})
	if b.DirectAlign() != 0 {
		t.Fatalf("DirectAlign() = %d, want 0", b.DirectAlign())
	}
	p := fill(AlignedBuffer(4096, 4096), 9)
	if err := b.WriteAt([][]byte{p}, 0, blockdev.WriteFUA); err != nil {
		t.Fatal(err)
	}
	got := AlignedBuffer(4096, 4096)
	if err := b.ReadAt([][]byte{got}, 0); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("round trip: %v", err)
	}
	if s := b.Stats(); s.DirectIOs != 0 || s.BufferedIOs != 2 {
		t.Fatalf("stats %+v", s)
	}
	// Other open errors are not swallowed.
	openFile = func(path string, mode int, perm uint32) (int, error) {
		if mode&syscall.O_DIRECT != 0 {
			return -1, syscall.EACCES
		}
		return syscall.Open(path, mode, perm)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, syscall.EACCES) {
		t.Fatalf("EACCES on the direct open: %v", err)
	}
}

// TestFUAWithoutPwritev2 makes pwritev2 report ENOSYS: the first FUA
// write discovers it and syncs, later ones go straight to write + sync.
func TestFUAWithoutPwritev2(t *testing.T) {
	saved := pwritev2Nr
	pwritev2Nr = 0
	t.Cleanup(func() { pwritev2Nr = saved })
	path := filepath.Join(t.TempDir(), "v")
	b := mustOpen(t, path, Options{Size: 1 << 20})
	p := fill(AlignedBuffer(8192, 4096), 2)
	for i := range 3 {
		if err := b.WriteAt([][]byte{p[:4096], p[4096:]}, uint64(i*16), blockdev.WriteFUA); err != nil {
			t.Fatal(err)
		}
	}
	if s := b.Stats(); s.FUAEmulated != 3 || s.FUANative != 0 || !b.noDSync.Load() {
		t.Fatalf("stats %+v, noDSync %v", s, b.noDSync.Load())
	}
	got := AlignedBuffer(8192, 4096)
	if err := b.ReadAt([][]byte{got}, 32); err != nil || !bytes.Equal(got, p) {
		t.Fatalf("read back: %v", err)
	}
}

// TestTruncatedBehindOurBack shrinks the file under an open backend: a
// read across the new end gets a short transfer (the cursor must advance
// across buffers correctly), then end of file, reported as a medium error.
func TestTruncatedBehindOurBack(t *testing.T) {
	for _, mode := range []DirectMode{DirectOff, DirectAuto} {
		path := filepath.Join(t.TempDir(), "v")
		b := mustOpen(t, path, Options{Size: 1 << 20, Direct: mode})
		data := fill(AlignedBuffer(8192, 4096), 4)
		if err := b.WriteAt([][]byte{data}, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 5000); err != nil {
			t.Fatal(err)
		}
		p := AlignedBuffer(8192, 4096)
		err := b.ReadAt([][]byte{p[:1024], p[1024:2048], p[2048:4096], p[4096:]}, 0)
		if !errors.Is(err, blockdev.ErrMedium) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("Direct %v: read across the new end of file: %v", mode, err)
		}
		if !bytes.Equal(p[:5000], data[:5000]) {
			t.Fatalf("Direct %v: the bytes before the end of file were not read in place", mode)
		}
		if s := b.Stats(); mode == DirectAuto && b.DirectAlign() > 8 && s.DirectRefused != 1 {
			t.Fatalf("Direct %v: a short direct read with a misaligned remainder must go buffered: %+v", mode, s)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	b := &Backend{path: "x"}
	for _, c := range []struct {
		e    syscall.Errno
		want error
	}{
		{syscall.EIO, blockdev.ErrMedium},
		{syscall.EBADMSG, blockdev.ErrMedium},
		{syscall.EUCLEAN, blockdev.ErrMedium},
		{syscall.EROFS, blockdev.ErrReadOnly},
	} {
		err := b.osErr("read", 4096, c.e)
		if !errors.Is(err, c.want) || !errors.Is(err, c.e) {
			t.Errorf("%v -> %v: want both %v and the errno", c.e, err, c.want)
		}
	}
	err := b.osErr("write", 0, syscall.ENOSPC)
	if errors.Is(err, blockdev.ErrMedium) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("ENOSPC -> %v", err)
	}
}

// TestCloseWaitsForCalls checks that Close and I/O can race without a
// descriptor being used after close: every call either completes or
// returns ErrClosed.
func TestCloseWaitsForCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v")
	b, err := Open(path, Options{Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	done := make(chan error)
	go func() {
		p := AlignedBuffer(4096, 4096)
		close(started)
		for {
			if err := b.WriteAt([][]byte{p}, 0, 0); err != nil {
				done <- err
				return
			}
		}
	}()
	<-started
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, blockdev.ErrClosed) {
		t.Fatalf("writer ended with %v, want ErrClosed", err)
	}
}

// TestNoAllocations proves the I/O paths allocate nothing, for single
// buffers, vectors and vectors longer than one iovec batch, direct and
// buffered.
func TestNoAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's bookkeeping is not what this test measures")
	}
	for _, mode := range []DirectMode{DirectAuto, DirectOff} {
		path := filepath.Join(t.TempDir(), "v")
		b := mustOpen(t, path, Options{Size: 1 << 20, BlockSize: 4096, Direct: mode})
		one := [][]byte{AlignedBuffer(4096, 4096)}
		four := make([][]byte, 4)
		for i := range four {
			four[i] = AlignedBuffer(4096, 4096)
		}
		many := make([][]byte, 100) // > iovBatch
		for i := range many {
			many[i] = AlignedBuffer(4096, 4096)
		}
		allocs := testing.AllocsPerRun(20, func() {
			for _, v := range [][][]byte{one, four, many} {
				if err := b.WriteAt(v, 8, 0); err != nil {
					t.Fatal(err)
				}
				if err := b.WriteAt(v, 8, blockdev.WriteFUA); err != nil {
					t.Fatal(err)
				}
				if err := b.ReadAt(v, 8); err != nil {
					t.Fatal(err)
				}
			}
		})
		if allocs != 0 {
			t.Errorf("Direct %v: %v allocations per run, want 0", mode, allocs)
		}
	}
}
