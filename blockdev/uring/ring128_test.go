//go:build linux

package uring

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func TestSQE128Layout(t *testing.T) {
	if s := unsafe.Sizeof(SQE128{}); s != 128 {
		t.Fatalf("SQE128 is %d bytes", s)
	}
	var e SQE128
	// Offsets from include/uapi/linux/io_uring.h: cmd_op at 8, user_data
	// at 32, the command area (addr3) at 48.
	if o := unsafe.Offsetof(e.Off); o != 8 {
		t.Fatalf("off at %d", o)
	}
	if o := unsafe.Offsetof(e.UserData); o != 32 {
		t.Fatalf("user_data at %d", o)
	}
	if o := unsafe.Offsetof(e.Cmd); o != 48 {
		t.Fatalf("cmd at %d", o)
	}
	e.Off = ^uint64(0)
	e.SetCmdOp(0xc0207504)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&e)), 128)
	if got := binary.NativeEndian.Uint32(b[8:]); got != 0xc0207504 {
		t.Fatalf("cmd_op bytes %#x", got)
	}
	if got := binary.NativeEndian.Uint32(b[12:]); got != 0 {
		t.Fatalf("pad1 not cleared: %#x", got)
	}
	if e.CmdOp() != 0xc0207504 {
		t.Fatal("CmdOp")
	}
}

func newRing128(t *testing.T, n int) *Ring128 {
	t.Helper()
	r, err := NewSQE128(n, 0)
	if errors.Is(err, ErrUnsupported) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestRing128 runs NOPs, a passthrough command on a file that has none
// (the kernel answers EOPNOTSUPP, proving the opcode and the big SQE reach
// it), a full ring, and a read on an eventfd woken from another goroutine.
func TestRing128(t *testing.T) {
	r := newRing128(t, 4)
	cqes := make([]CQE, 16)
	one := func() CQE {
		t.Helper()
		if _, err := r.SubmitAndWait(1); err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		if n := r.Reap(cqes[:1]); n != 1 {
			t.Fatalf("Reap: %d", n)
		}
		return cqes[0]
	}
	e := r.Next()
	e.Opcode, e.UserData = OpNop, 5
	if c := one(); c.UserData != 5 || c.Res != 0 {
		t.Fatalf("nop: %+v", c)
	}

	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	e = r.Next()
	e.Opcode, e.FD, e.UserData = OpURingCmd, int32(f.Fd()), 6
	e.SetCmdOp(1)
	if c := one(); c.UserData != 6 || syscall.Errno(-c.Res) != syscall.EOPNOTSUPP {
		t.Fatalf("uring_cmd on a regular file: %+v", c)
	}

	for i := range r.Entries() {
		e := r.Next()
		if e == nil {
			t.Fatalf("Next nil at %d", i)
		}
		e.Opcode = OpNop
	}
	if r.Next() != nil {
		t.Fatal("Next past a full ring")
	}
	if n, err := r.Submit(); n != r.Entries() || err != nil {
		t.Fatalf("Submit: %d %v", n, err)
	}
	for got := 0; got < r.Entries(); {
		if err := r.Wait(); err != nil {
			t.Fatal(err)
		}
		got += r.Reap(cqes)
	}

	efd, val := queueEventfdRead(t, r, 9)
	if _, err := r.Submit(); err != nil {
		t.Fatal(err)
	}
	go func() {
		one := [8]byte{1}
		syscall.Write(int(efd), one[:])
	}()
	if c := one(); c.UserData != 9 || c.Res != 8 || val[0] != 1 {
		t.Fatalf("eventfd read: %+v %v", c, val)
	}
}

// TestSubmitAndWaitFor: the wait returns on a completion, after its
// timeout with none, with entries submitted in the same call, and —
// keeping its P while asleep — does not hold up a stop-the-world:
// runtime.GC returns while another goroutine sleeps in it for an hour.
func TestSubmitAndWaitFor(t *testing.T) {
	r := newRing128(t, 8)
	if n, err := r.SubmitAndWaitFor(time.Millisecond); err != nil || n != 0 {
		t.Fatalf("idle ring: %d, %v; want 0 after the timeout", n, err)
	}
	e := r.Next()
	e.Opcode, e.UserData = OpNop, 7
	// A signal at the call (EINTR: the runtime preempting this goroutine)
	// submits nothing and leaves the entry queued: the caller calls again.
	n, err := r.SubmitAndWaitFor(time.Hour)
	for err == nil && n == 0 && *r.sqTail != *r.sqHead {
		n, err = r.SubmitAndWaitFor(time.Hour)
	}
	if err != nil || n != 1 {
		t.Fatalf("nop: submitted %d, %v", n, err)
	}
	out := make([]CQE, 4)
	if n := r.Reap(out); n != 1 || out[0].UserData != 7 {
		t.Fatalf("reaped %d (%+v)", n, out[:n])
	}

	efd, val := queueEventfdRead(t, r, 9)
	asleep, done := make(chan struct{}), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(asleep)
		for {
			if _, err := r.SubmitAndWaitFor(time.Hour); err != nil {
				done <- err
				return
			}
			if n := r.Reap(out); n > 0 {
				if out[0].UserData != 9 || out[0].Res != 8 {
					t.Errorf("eventfd read: %+v", out[0])
				}
				done <- nil
				return
			}
		}
	}()
	<-asleep
	for range 3 {
		runtime.GC() // would wait for the hour if the sleeper kept the world from stopping
	}
	one := [8]byte{1}
	if _, err := syscall.Write(int(efd), one[:]); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(val)
}

// queueEventfdRead makes an eventfd (closed at the end of the test) and
// queues, not submits, an 8-byte read of it with user data ud into the
// returned buffer.
func queueEventfdRead(t *testing.T, r *Ring128, ud uint64) (efd uintptr, val *[8]byte) {
	t.Helper()
	efd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	t.Cleanup(func() { syscall.Close(int(efd)) })
	val = new([8]byte)
	e := r.Next()
	e.Opcode, e.FD, e.Off, e.UserData = OpRead, int32(efd), ^uint64(0), ud
	e.Addr, e.Len = uint64(uintptr(unsafe.Pointer(val))), 8
	return efd, val
}
