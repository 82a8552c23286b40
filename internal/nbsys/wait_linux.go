package nbsys

import (
	"syscall"
	"time"
	"unsafe"
)

// Poll is one ppoll(2) of fds for at most timeout (> 0), made without
// the scheduler's syscall state: the calling goroutine keeps its P while
// it sleeps. It returns how many descriptors have events, 0 when the
// timeout passed, or the errno (EINTR: a signal, such as the runtime's
// preemption request, ended the wait early: the caller loops).
//
// Why a sleeping call may keep its P here (unlike the rest of the
// package): a goroutine that spends its life in short blocking system
// calls and never parks in Go (a poll loop) is, to the runtime, one that
// never yields. Once its P's scheduling count has not moved for 10 ms,
// the monitor thread (sysmon) takes the P from every system call it
// catches the loop in and hands it off, and each such take resets sysmon
// to polling every 20 µs: on this host a goroutine sleeping in read(2)
// between writes 100 µs apart made sysmon switch 16,000–19,000 times in 3
// s (8 % of a core); the same loop sleeping in a raw call, a few hundred.
// Kept by a raw call, the P is never taken from the sleep; the runtime
// asks the goroutine to yield by a signal instead, which ends the wait
// (EINTR), and a stop-the-world is served the same way within the
// runtime's 100 µs re-signalling (TestPoll). The timeout bounds the wait
// for a runtime that sends no signals (GODEBUG=asyncpreemptoff=1). The
// caller's process needs a spare P (GOMAXPROCS above the number of such
// loops), as the attachment's loops have.
func Poll(fds []PollFd, timeout time.Duration) (int, syscall.Errno) {
	ts := syscall.NsecToTimespec(int64(timeout))
	n, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(unsafe.SliceData(fds))), uintptr(len(fds)),
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// PollBlocking is one ppoll(2) of fds with no timeout, made as an
// ordinary system call: the calling goroutine gives its P up while it
// sleeps, so the runtime may hand the P to other work, and once every P
// is idle its monitor thread stops polling. It is for a poll loop's idle
// spells (its last Poll sleeps ended with nothing), where keeping the P
// has the runtime signal the loop every 10–20 ms; in busy spells Poll is
// cheaper (see Poll). Only an event or a signal ends the wait (EINTR);
// the caller should pass through the scheduler after it (Yielder), since
// the runtime counts the sleep as one long run of its P.
func PollBlocking(fds []PollFd) (int, syscall.Errno) {
	n, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(unsafe.SliceData(fds))), uintptr(len(fds)), 0, 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// PollFd is struct pollfd.
type PollFd struct {
	Fd      int32
	Events  int16
	Revents int16
}
