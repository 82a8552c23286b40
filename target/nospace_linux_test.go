package target

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestNoSpaceOnSmallTmpfs: a sparse file volume whose filesystem fills up
// (a 4 MiB volume on a 5 MiB tmpfs where another file takes 4 MiB) answers
// Capacity Exceeded + DNR once the filesystem is full — not Internal Error —
// and the blocks written before stay readable. (A volume larger than its
// whole filesystem is refused at open: file.CheckSize.) Needs CAP_SYS_ADMIN
// to mount.
func TestNoSpaceOnSmallTmpfs(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=5m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	fb, err := file.Open(filepath.Join(dir, "vol.img"), file.Options{Size: 4 << 20, BlockSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	// Another tenant of the filesystem takes 4 of its 5 MiB.
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, 4<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: fb})
	t.Cleanup(func() { s.tg.Close(); fb.Close() })
	buf := make([]byte, 64<<10)
	for i := range buf {
		buf[i] = byte(i)
	}
	var st nvme.Status
	lba := uint64(0)
	for ; lba < 1024; lba += 16 {
		st = s.io.do(rw(nvme.IOWrite, 1, lba, 16, 0), buf).Status()
		if st != nvme.StatusSuccess {
			break
		}
	}
	if st != nvme.StatusCapacityExceeded.WithDNR() {
		t.Fatalf("write at LBA %d on a full filesystem: %v, want capacity exceeded with DNR", lba, st)
	}
	if lba == 0 {
		t.Fatal("not even the first write fit")
	}
	got := make([]byte, 64<<10)
	s.io.expect(rw(nvme.IORead, 1, 0, 16, 0), got, nvme.StatusSuccess)
	if string(got) != string(buf) {
		t.Fatal("data written before the filesystem filled up is lost")
	}
	if ns, _ := s.sub.NamespaceStats(1); ns.CapacityExceeded == 0 {
		t.Fatalf("namespace stats %+v", ns)
	}
}
