package file

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
)

// smallTmpfs mounts a tmpfs of size bytes on a fresh temporary directory
// and unmounts it when the test ends. It skips the test where mounting is
// not permitted (not root, no CAP_SYS_ADMIN, a container without mount).
func smallTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a %s tmpfs on %s (needs root / CAP_SYS_ADMIN): %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillUp writes to a new file in dir until the filesystem is full.
func fillUp(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
			}
			return
		}
	}
}

func wantNoSpace(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, blockdev.ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s on a full filesystem: %v, want blockdev.ErrNoSpace wrapping ENOSPC", what, err)
	}
}

type errDone chan error

func (c errDone) IODone(err error) { c <- err }

// TestNoSpace fills a small tmpfs and checks that every write path
// reports blockdev.ErrNoSpace (the target's Capacity Exceeded), with the
// errno still visible: blocking direct and buffered writes, FUA, the
// io_uring fast path, and zeroes written when fallocate is unavailable.
func TestNoSpace(t *testing.T) {
	dir := smallTmpfs(t, "1m")
	path := filepath.Join(dir, "vol")
	b := mustOpen(t, path, Options{Size: 512 << 10, BlockSize: 4096})
	fillUp(t, dir)

	buf := AlignedBuffer(64<<10, 4096)
	fill(buf, 1)
	wantNoSpace(t, b.WriteAt([][]byte{buf}, 0, 0), "direct WriteAt")
	wantNoSpace(t, b.WriteAt([][]byte{buf[1:4097], buf[4097 : 8192+1]}, 16, 0), "buffered WriteAt")
	wantNoSpace(t, b.WriteAt([][]byte{buf}, 32, blockdev.WriteFUA), "FUA WriteAt")

	if b.ring != nil {
		done := make(errDone, 1)
		if !b.SubmitWrite(buf, 48, 0, done) {
			t.Fatal("SubmitWrite refused an aligned write")
		}
		wantNoSpace(t, <-done, "SubmitWrite")
	} else {
		t.Log("no io_uring fast path here; async path not checked")
	}

	b.noZeroRange.Store(true)
	b.noPunchHole.Store(true)
	wantNoSpace(t, b.WriteZeroes(64, 16), "WriteZeroes (written zeroes)")

	// Room again: the same backend works.
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteAt([][]byte{buf}, 0, 0); err != nil {
		t.Fatalf("WriteAt after freeing space: %v", err)
	}
}

// TestNoSpaceErrno checks the mapping itself for both errnos.
func TestNoSpaceErrno(t *testing.T) {
	b := &Backend{path: "/x"}
	for _, e := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT} {
		err := b.osErr("write", 4096, e)
		if !errors.Is(err, blockdev.ErrNoSpace) || !errors.Is(err, e) {
			t.Errorf("osErr(%v) = %v, want ErrNoSpace and %v", e, err, e)
		}
	}
	if err := b.osErr("write", 0, syscall.EIO); errors.Is(err, blockdev.ErrNoSpace) {
		t.Errorf("EIO mapped to ErrNoSpace: %v", err)
	}
}

// TestImpossibleSizes: sizes the filesystem can never hold are refused
// by CheckSize and by Open, which leaves no file behind.
func TestImpossibleSizes(t *testing.T) {
	dir := smallTmpfs(t, "1m")
	path := filepath.Join(dir, "vol")
	for _, size := range []int64{1 << 50, math.MaxInt64 &^ 4095, 2 << 20} { // 1 PiB, 8 EiB - 4 KiB, 2 MiB
		if err := CheckSize(path, size); !errors.Is(err, ErrTooLarge) {
			t.Errorf("CheckSize(%d) on a 1 MiB tmpfs = %v, want ErrTooLarge", size, err)
		}
		if b, err := Open(path, Options{Size: size}); !errors.Is(err, ErrTooLarge) {
			if err == nil {
				b.Close()
			}
			t.Errorf("Open(Size %d) on a 1 MiB tmpfs = %v, want ErrTooLarge", size, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("refused Open left %s behind (%v)", path, err)
		}
	}
	if err := CheckSize(path, 512<<10); err != nil {
		t.Fatalf("CheckSize(512 KiB) on a 1 MiB tmpfs: %v", err)
	}
	b := mustOpen(t, path, Options{Size: 512 << 10})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// An existing file of that size needs nothing more.
	if err := CheckSize(path, 512<<10); err != nil {
		t.Fatalf("CheckSize of the existing size: %v", err)
	}
	// Growing an existing file is checked as well.
	if err := CheckSize(path, 1<<50); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("CheckSize grow to 1 PiB = %v, want ErrTooLarge", err)
	}
	if _, err := Open(path, Options{Size: 1 << 50}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Open grow to 1 PiB = %v, want ErrTooLarge", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() != 512<<10 {
		t.Fatalf("refused grow changed the file: %v %v", st, err)
	}
	if err := CheckSize(path, 0); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("CheckSize(0) = %v", err)
	}
	if err := CheckSize(dir, 4096); !errors.Is(err, ErrUnsupportedFile) {
		t.Fatalf("CheckSize(directory) = %v", err)
	}
}

// TestMaxFileSize: a filesystem whose capacity exceeds its maximum file
// size answers EFBIG when the file is grown; Open and CheckSize say so.
func TestMaxFileSize(t *testing.T) {
	ftruncate = func(int, int64) error { return syscall.EFBIG }
	t.Cleanup(func() { ftruncate = syscall.Ftruncate })
	path := filepath.Join(t.TempDir(), "vol")
	if err := CheckSize(path, 1<<20); !errors.Is(err, ErrTooLarge) || !errors.Is(err, syscall.EFBIG) {
		t.Errorf("CheckSize with EFBIG = %v, want ErrTooLarge wrapping EFBIG", err)
	}
	if _, err := Open(path, Options{Size: 1 << 20}); !errors.Is(err, ErrTooLarge) || !errors.Is(err, syscall.EFBIG) {
		t.Errorf("Open with EFBIG = %v, want ErrTooLarge wrapping EFBIG", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("refused Open left %s behind (%v)", path, err)
	}
}
