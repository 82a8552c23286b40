package ublk_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmablk/rdmablk/ublk"
	"github.com/rdmablk/rdmablk/ublk/ublktest"
)

// openControlOrSkip loads ublk_drv when running as root and skips the
// test when the kernel has no ublk.
func openControlOrSkip(t *testing.T) *ublk.Control {
	t.Helper()
	if _, err := os.Stat(ublk.ControlPath); err != nil && os.Geteuid() == 0 {
		out, err := exec.Command("modprobe", "ublk_drv").CombinedOutput()
		t.Logf("modprobe ublk_drv: %v %s", err, bytes.TrimSpace(out))
	}
	c, err := ublk.OpenControl()
	if errors.Is(err, ublk.ErrNoUblk) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func alignedBuf(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(b) })
	return b
}

func openBlock(t *testing.T, path string, flags int) *os.File {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT|flags, 0)
		if err == nil {
			return f
		}
		if !errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // the node appears asynchronously without devtmpfs
	}
}

func blkRange(t *testing.T, f *os.File, req uintptr, off, n uint64) {
	t.Helper()
	r := [2]uint64{off, n}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(unsafe.Pointer(&r))); e != 0 {
		t.Fatalf("ioctl %#x: %v", req, e)
	}
}

const (
	blkDiscard   = 0x1277     // BLKDISCARD
	blkZeroOut   = 0x127f     // BLKZEROOUT
	blkGetSize64 = 0x80081272 // BLKGETSIZE64
)

func fill(b []byte, seed int) {
	for i := range b {
		b[i] = byte(seed*7 + i*13 + i>>9)
	}
}

// TestRealUblk runs a memory-backed device through the kernel's ublk
// driver: create, O_DIRECT write/read/compare, flush and FUA, discard and
// write-zeroes, a server crash (Detach) under I/O and recovery by a new
// server on the same device id with no error seen by the writer, then
// stop and delete. It skips without /dev/ublk-control.
func TestRealUblk(t *testing.T) {
	ctrl := openControlOrSkip(t)
	if f, err := ctrl.Features(); err == nil {
		t.Logf("driver features %#x", f)
	}
	g := testGeometry
	mb := ublktest.NewMem(g)
	d, err := ublk.Create(mb, ublk.Options{DevID: -1, Control: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			d.Stop()
		}
	}()
	info := d.Info()
	t.Logf("created %s: %d queues × depth %d, max_io_buf_bytes %d, flags %#x", d.Path(), info.NrHWQueues, info.QueueDepth, info.MaxIOBufBytes, info.Flags)
	if p, err := ctrl.GetParams(d.ID()); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("params: lbs %d pbs %d sectors %d max_sectors %d attrs %#x disk %d:%d", 1<<p.LogicalBSShift, 1<<p.PhysicalBSShift, p.DevSectors, p.MaxSectors, p.Attrs, p.DiskMajor, p.DiskMinor)
		if p.DevSectors != g.Blocks || p.DiskMajor == 0 {
			t.Fatalf("GET_PARAMS: %+v", p)
		}
	}

	f := openBlock(t, d.Path(), 0)
	defer f.Close()
	var size uint64
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), blkGetSize64, uintptr(unsafe.Pointer(&size))); e != 0 || size != g.Blocks*512 {
		t.Fatalf("BLKGETSIZE64 = %d, %v", size, e)
	}

	// Write, read back, compare (through the device and in the backend).
	const mib = 1 << 20
	wbuf, rbuf := alignedBuf(t, mib), alignedBuf(t, mib)
	for i, off := range []int64{0, 32 * mib, 63 * mib} {
		fill(wbuf, i+1)
		if n, err := f.WriteAt(wbuf, off); n != mib || err != nil {
			t.Fatalf("write at %d: %d %v", off, n, err)
		}
		clear(rbuf)
		if n, err := f.ReadAt(rbuf, off); n != mib || err != nil {
			t.Fatalf("read at %d: %d %v", off, n, err)
		}
		if !bytes.Equal(wbuf, rbuf) {
			t.Fatalf("read at %d differs from what was written", off)
		}
		if !bytes.Equal(mb.Data[off:off+mib], wbuf) {
			t.Fatalf("backend at %d differs from what was written", off)
		}
	}
	if _, err := f.ReadAt(rbuf[:4096], int64(size)); err == nil {
		t.Fatal("read past the end succeeded")
	}

	// Flush and FUA.
	flushes := mb.Ops(ublk.OpFlush)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if mb.Ops(ublk.OpFlush) == flushes {
		t.Fatal("fsync sent no flush to the backend")
	}
	fd, err := os.OpenFile(d.Path(), os.O_RDWR|syscall.O_DIRECT|syscall.O_DSYNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fuas := mb.FUAs()
	if _, err := fd.WriteAt(wbuf[:4096], 5*mib); err != nil {
		t.Fatal(err)
	}
	fd.Close()
	if mb.FUAs() == fuas {
		t.Fatal("O_DSYNC write reached the backend without FUA")
	}

	// Discard and write-zeroes.
	fill(wbuf, 9)
	f.WriteAt(wbuf, 2*mib)
	f.WriteAt(wbuf, 3*mib)
	discards, zeroes := mb.Ops(ublk.OpDiscard), mb.Ops(ublk.OpWriteZeroes)
	blkRange(t, f, blkDiscard, 2*mib, mib)
	blkRange(t, f, blkZeroOut, 3*mib, mib)
	if mb.Ops(ublk.OpDiscard) == discards || mb.Ops(ublk.OpWriteZeroes) == zeroes {
		t.Fatalf("discard/zeroout did not reach the backend (discards %d→%d, write-zeroes %d→%d)", discards, mb.Ops(ublk.OpDiscard), zeroes, mb.Ops(ublk.OpWriteZeroes))
	}
	f.ReadAt(rbuf, 3*mib)
	if !bytes.Equal(rbuf, make([]byte, mib)) {
		t.Fatal("BLKZEROOUT range does not read zeroes")
	}

	// A backend error reaches the application as EIO.
	mb.FailNext(ublk.OpRead)
	if _, err := f.ReadAt(rbuf[:4096], 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read with a failing backend: %v", err)
	}

	// Crash the server under I/O; recover with a new server.
	const writes = 256
	var wg sync.WaitGroup
	started := make(chan struct{})
	werr := make(chan error, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		wf, err := os.OpenFile(d.Path(), os.O_RDWR|syscall.O_DIRECT, 0)
		if err != nil {
			werr <- err
			close(started)
			return
		}
		defer wf.Close()
		buf := wbuf[:4096]
		for i := range writes {
			fill(buf, 1000+i)
			if _, err := wf.WriteAt(buf, int64(8*mib+i*4096)); err != nil {
				werr <- fmt.Errorf("write %d across the crash: %w", i, err)
				return
			}
			if i == writes/4 {
				close(started)
			}
		}
	}()
	<-started
	select {
	case err := <-werr:
		t.Fatal(err)
	default:
	}
	id := d.ID()
	before := d.Stats()
	d.Detach()
	if err := d.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("server detached after %d requests", before.Requests)
	if info, err := ctrl.GetDevInfo(id); err == nil {
		t.Logf("after detach: state %d (2 = quiesced)", info.State)
	}
	d2, err := ublk.Recover(id, mb, ublk.Options{Control: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	d = d2
	if info, err := ctrl.GetDevInfo(id); err != nil || info.State != ublk.StateLive {
		t.Fatalf("after recovery: %+v %v", info, err)
	}
	wg.Wait()
	select {
	case err := <-werr:
		t.Fatal(err)
	default:
	}
	buf := alignedBuf(t, 4096)
	want := make([]byte, 4096)
	for i := range writes {
		fill(want, 1000+i)
		if _, err := f.ReadAt(buf, int64(8*mib+i*4096)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("block %d written across the crash reads back wrong", i)
		}
	}
	fill(want, 1)
	f.ReadAt(rbuf, 0)
	if !bytes.Equal(rbuf[:4096], want[:4096]) {
		t.Fatal("data written before the crash reads back wrong")
	}
	t.Logf("recovered server: %+v", d.Stats())
	f.Close()

	stopped = true
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Done():
	default:
		t.Fatal("Done not closed after Stop")
	}
	if _, err := os.Stat(d.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after Stop: %v", d.Path(), err)
	}
	// DEL_DEV_ASYNC frees the id when the last reference goes, which the
	// kernel drops right after; there is no event to wait on.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, err := ctrl.GetDevInfo(id)
		if errors.Is(err, syscall.ENODEV) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET_DEV_INFO after DEL_DEV_ASYNC: %v", err)
		}
	}
	checkKernelLog(t)
}

// checkKernelLog shows the kernel's ublk lines and fails on a warning,
// oops or hung task (root only; dmesg may be missing).
func checkKernelLog(t *testing.T) {
	t.Helper()
	out, err := exec.Command("dmesg").CombinedOutput()
	if err != nil {
		t.Logf("dmesg: %v", err)
		return
	}
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if strings.Contains(l, "ublk") {
			t.Logf("kernel: %s", l)
		}
		if strings.Contains(l, "blocked for more than") {
			t.Errorf("kernel: %s", l)
		}
		if strings.Contains(l, "WARNING") || strings.Contains(l, "BUG") {
			// A warning whose backtrace names ublk is ours.
			for _, m := range lines[i:min(i+30, len(lines))] {
				if strings.Contains(m, "ublk") {
					t.Errorf("kernel warning in ublk: %s / %s", l, m)
					break
				}
			}
		}
	}
}

var testGeometry = ublk.Geometry{
	LogicalBlockSize: 512, PhysicalBlockSize: 4096, Blocks: 64 << 20 / 512,
	Queues: 2, Depth: 32, MaxTransfer: 256 << 10,
	MaxDiscardBlocks: 1 << 16, MaxWriteZeroesBlocks: 1 << 16,
	VolatileCache: true, FUA: true,
}

// TestUblkServerChild is the server process of TestRealUblkKill9 (it runs
// only with UBLK_CHILD_SHM set): it creates a device over the shared
// volume, prints its id and serves until killed.
func TestUblkServerChild(t *testing.T) {
	shm := os.Getenv("UBLK_CHILD_SHM")
	if shm == "" {
		t.Skip("helper process of TestRealUblkKill9")
	}
	mb, err := ublktest.NewSharedMem(shm, testGeometry)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ublk.Create(mb, ublk.Options{DevID: -1})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("UBLK-ID %d\n", d.ID())
	select {}
}

// TestRealUblkKill9 serves a device from a child process, kills it with
// SIGKILL while a writer is busy, recovers the device from this process
// over the same volume, and checks the writer saw no error and every
// block reads back.
func TestRealUblkKill9(t *testing.T) {
	ctrl := openControlOrSkip(t)
	shm := fmt.Sprintf("/dev/shm/ublk-test-%d", os.Getpid())
	defer os.Remove(shm)
	cmd := exec.Command(os.Args[0], "-test.run=^TestUblkServerChild$", "-test.v")
	cmd.Env = append(os.Environ(), "UBLK_CHILD_SHM="+shm)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var id uint32
	found := false
	sc := bufio.NewScanner(out)
	for !found && sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "UBLK-ID %d", &id); err == nil {
			found = true
		} else {
			t.Logf("child: %s", sc.Text())
		}
	}
	if !found {
		t.Fatalf("child gave no device id (%v)", sc.Err())
	}
	go io.Copy(io.Discard, out)
	path := fmt.Sprintf("/dev/ublkb%d", id)
	t.Logf("child pid %d serves %s", cmd.Process.Pid, path)

	const writes = 512
	werr := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		defer close(werr)
		wf, err := os.OpenFile(path, os.O_RDWR|syscall.O_DIRECT, 0)
		if err != nil {
			close(started)
			werr <- err
			return
		}
		defer wf.Close()
		buf, _ := syscall.Mmap(-1, 0, 4096, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		for i := range writes {
			fill(buf, 5000+i)
			if _, err := wf.WriteAt(buf, int64(i*4096)); err != nil {
				werr <- fmt.Errorf("write %d across kill -9: %w", i, err)
				break
			}
			if i == writes/4 {
				close(started)
			}
		}
		if err := wf.Sync(); err != nil {
			werr <- fmt.Errorf("fsync after kill -9: %w", err)
		}
	}()
	<-started
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	t.Log("server killed with SIGKILL")
	mb, err := ublktest.NewSharedMem(shm, testGeometry)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ublk.Recover(id, mb, ublk.Options{Control: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	f := openBlock(t, path, 0)
	defer f.Close()
	buf := alignedBuf(t, 4096)
	want := make([]byte, 4096)
	for i := range writes {
		fill(want, 5000+i)
		if _, err := f.ReadAt(buf, int64(i*4096)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("block %d written across kill -9 reads back wrong", i)
		}
	}
	t.Logf("recovered in-process: %+v", d.Stats())
	f.Close()
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	checkKernelLog(t)
}

// TestRealUblkFio runs fio against a memory-backed device (4 KiB random
// writes with crc32c verify, then random reads, QD32, 2 jobs on their own
// 16 MiB regions) and reports
// what it measured. It skips without ublk or fio. Figures under the lab's
// TCG guest say nothing about speed; the point is verify errors = 0.
func TestRealUblkFio(t *testing.T) {
	ctrl := openControlOrSkip(t)
	if _, err := exec.LookPath("fio"); err != nil {
		t.Skip("no fio")
	}
	mb := ublktest.NewMem(testGeometry)
	d, err := ublk.Create(mb, ublk.Options{DevID: -1, Control: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	for _, job := range [][]string{
		{"--name=verify", "--rw=randwrite", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1", "--size=16M", "--offset_increment=16M"},
		{"--name=randread", "--rw=randread", "--size=16M", "--offset_increment=16M", "--time_based", "--runtime=10"},
	} {
		args := append([]string{"--filename=" + d.Path(), "--ioengine=libaio", "--direct=1", "--bs=4k", "--iodepth=32",
			"--numjobs=2", "--group_reporting", "--output-format=terse", "--terse-version=3"}, job...)
		out, err := exec.Command("fio", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("fio %v: %v\n%s", job, err, out)
		}
		// terse v3: field 5 = errors, 8 = read IOPS, 49 = write IOPS.
		f := strings.Split(strings.TrimSpace(string(out)), ";")
		if len(f) < 50 {
			t.Fatalf("fio output: %s", out)
		}
		t.Logf("fio %s: err=%s read_iops=%s write_iops=%s", job[0], f[4], f[7], f[48])
		if f[4] != "0" {
			t.Fatalf("fio %s reported errors: %s", job[0], f[4])
		}
	}
	t.Logf("device stats: %+v", d.Stats())
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestRealUblkRemoveAfterCrash: a device whose server died and is not
// recovered can be removed; the I/O the kernel held ends in EIO instead of
// hanging its task.
func TestRealUblkRemoveAfterCrash(t *testing.T) {
	ctrl := openControlOrSkip(t)
	d, err := ublk.Create(ublktest.NewMem(testGeometry), ublk.Options{DevID: -1, Control: ctrl})
	if err != nil {
		t.Fatal(err)
	}
	id, path := d.ID(), d.Path()
	f := openBlock(t, path, 0)
	defer f.Close()
	buf := alignedBuf(t, 4096)
	if _, err := f.WriteAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	d.Detach()
	werr := make(chan error, 1)
	go func() { // held by the quiesced device until Remove
		_, err := f.WriteAt(buf, 4096)
		werr <- err
	}()
	if err := ublk.Remove(id, ctrl); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-werr:
		if err == nil {
			t.Fatal("write to a removed device without a server succeeded")
		}
		t.Logf("held write ended with: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("write held by a removed device did not end")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s after Remove: %v", path, err)
	}
	checkKernelLog(t)
}
