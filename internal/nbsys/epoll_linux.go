package nbsys

import (
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// EpollWait is one epoll_pwait(2) on epfd for at most timeout (rounded
// up to a whole millisecond), made without the scheduler's syscall state,
// as Poll (wait_linux.go says why a sleeping loop keeps its P, and what
// the process then owes it: a spare P, ReserveP). It returns how many
// events it stored in events, 0 when the timeout passed, or the errno
// (EINTR: a signal, such as the runtime's preemption request, ended the
// wait early; epoll_pwait is never restarted after a signal handler).
func EpollWait(epfd int, events []unix.EpollEvent, timeout time.Duration) (int, syscall.Errno) {
	if len(events) == 0 {
		return 0, syscall.EINVAL
	}
	ms := (timeout + time.Millisecond - 1) / time.Millisecond
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(ms), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}
