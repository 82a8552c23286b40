package nbsys

import (
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The parked set is one process-wide epoll set (level-triggered) of the
// data path's descriptors that goroutines wait on in the runtime's poller:
// NVMe/TCP sockets, io_uring eventfds, verbs completion channels. It
// exists for loops that spin instead of parking (target/tcp's idle
// reader). Such a loop yields each pass (runtime.Gosched), which lets
// every runnable goroutine run, but the runtime polls the network only
// when a P finds its run queues empty — and a spinner is always on them —
// so a goroutine whose descriptor became ready while another spins would
// wait for the monitor thread's poll, up to 10 ms. A spinner therefore
// looks at this set each pass (ParkedReady) and parks as soon as any
// descriptor but its own is ready; the runtime's poll then finds it.
//
// The set is kept only in a process that spins: until UseParked is
// called (a spinning NVMe/TCP listener calls it; rdmablkd at start when
// transport.tcp_poll_spins is set), WatchParked adds nothing, since every
// member costs the kernel a second wake-up callback per event it signals.
// A descriptor watched before UseParked stays out (best effort, below).
//
// Membership is best effort: a descriptor that could not be added is
// simply not watched (ParkedReady cannot report it; a spinner holds it
// up for at most its spin budget). A descriptor leaves the set when it is
// closed (the kernel drops an epoll entry with its last file reference),
// so owners add and never need to remove; UnwatchParked exists for an
// owner that keeps the descriptor open.
var parked struct {
	once sync.Once
	epfd int // -1: no set (epoll_create1 failed)
	used atomic.Bool
}

// UseParked makes WatchParked add descriptors from now on: the process
// has a spinner. Any goroutine; idempotent.
func UseParked() { parked.used.Store(true) }

func parkedFD() int {
	parked.once.Do(func() {
		fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			fd = -1
		}
		parked.epfd = fd
	})
	return parked.epfd
}

// WatchParked adds fd to the parked set for events (ParkedIn, and
// ParkedOut for a writer that waits for room), once UseParked was called;
// before that it does nothing. A descriptor already in the set gets the
// new events.
func WatchParked(fd int, events uint32) error {
	if !parked.used.Load() {
		return nil
	}
	ep := parkedFD()
	if ep < 0 {
		return syscall.ENOSYS
	}
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	err := unix.EpollCtl(ep, unix.EPOLL_CTL_MOD, fd, &ev)
	if err == unix.ENOENT {
		err = unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev)
	}
	return err
}

// UnwatchParked removes fd from the parked set. Only for a descriptor
// that stays open: a closed one has left already, and its number may
// belong to another descriptor by now.
func UnwatchParked(fd int) {
	if ep := parkedFD(); ep >= 0 {
		_ = unix.EpollCtl(ep, unix.EPOLL_CTL_DEL, fd, nil)
	}
}

// ParkedReady looks at the parked set without waiting (one raw
// epoll_pwait with a zero timeout, into buf, which must not be empty):
// self, fd is ready; others, another descriptor is — or the set cannot be
// looked at, so that a spinner never spins blind.
func ParkedReady(fd int, buf []unix.EpollEvent) (self, others bool) {
	ep := parkedFD()
	if ep < 0 || len(buf) == 0 {
		return false, true
	}
	n, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(ep), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)), 0, 0, 0)
	if e == syscall.EINTR {
		return false, false
	}
	if e != 0 {
		return false, true
	}
	for _, ev := range buf[:n] {
		if int(ev.Fd) == fd {
			self = true
		} else {
			others = true
		}
	}
	return self, others
}
