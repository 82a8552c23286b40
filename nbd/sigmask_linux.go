package nbd

import "golang.org/x/sys/unix"

// withSignalsBlocked runs fn with every signal blocked on the calling
// thread, which must be locked to its goroutine (runtime.LockOSThread),
// and restores the thread's mask after it.
//
// Why: NBD_DO_IT sleeps interruptibly until the device is disconnected,
// and a signal the thread takes ends that sleep — and the kernel then
// shuts the device's sockets down (drivers/block/nbd.c,
// nbd_start_device_ioctl): every request after it fails with EIO and the
// device drops to size 0. A process-directed signal goes to any thread
// that does not block it: SIGPROF of a CPU profile (`rdmablk connect
// --cpuprofile`; found in the lab), SIGCHLD, SIGTERM, SIGHUP. Blocked
// here, they go to the process's other threads. The disconnect path does
// not rely on signals (Detach clears the socket with ioctls from another
// thread).
func withSignalsBlocked(fn func() error) error {
	var all, old unix.Sigset_t
	for i := range all.Val {
		all.Val[i] = ^all.Val[i]
	}
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &all, &old); err != nil {
		return fn() // not expected; run it as before
	}
	defer unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
	return fn()
}
