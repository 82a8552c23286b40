package nbd

import (
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWithSignalsBlocked: while fn runs (NBD_DO_IT in production), its
// thread blocks the signals a process gets sent — a CPU profile's
// SIGPROF, SIGCHLD, SIGTERM, SIGHUP, the runtime's SIGURG — so none can
// end NBD_DO_IT and shut the device down; afterwards the thread's mask is
// what it was.
func TestWithSignalsBlocked(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, inside, after unix.Sigset_t
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &before); err != nil {
		t.Fatal(err)
	}
	if err := withSignalsBlocked(func() error { return unix.PthreadSigmask(unix.SIG_BLOCK, nil, &inside) }); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []unix.Signal{unix.SIGPROF, unix.SIGURG, unix.SIGCHLD, unix.SIGTERM, unix.SIGHUP, unix.SIGINT} {
		if n := uint(sig) - 1; inside.Val[n/64]>>(n%64)&1 != 1 {
			t.Errorf("%v not blocked while fn runs", sig)
		}
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, nil, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("mask after %v, before %v", after, before)
	}
}
