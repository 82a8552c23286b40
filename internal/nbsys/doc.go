// Package nbsys makes the system calls of a non-blocking I/O path without
// telling the Go scheduler about them: a read or a write on a descriptor
// in non-blocking mode (O_NONBLOCK), which returns EAGAIN rather than
// sleep, or a write that cannot sleep (adding 1 to an eventfd).
//
// Why: syscall.Syscall and unix.Read enter the scheduler's syscall state
// (entersyscall/exitsyscall) so that a call that blocks gives its P to
// another thread. On an otherwise idle process the first such call also
// wakes the runtime's monitor thread (sysmon), which sleeps while every P
// is idle: a futex wake and a context switch per I/O on a lightly loaded
// target — on a one-CPU guest, the CPU the I/O itself needs (lab profile,
// issue 14: entersyscall/exitsyscall and the futex under them ~8 % of the
// NVMe/TCP target's samples at QD1). A call that cannot sleep needs none
// of that. What it costs: while one runs, its goroutine holds its P and
// cannot be preempted, so a call that does block (a descriptor that is
// not in non-blocking mode) would stall that P and a stop-the-world — the
// caller's contract is never to pass one. EINTR is returned, not retried.
//
// Two calls do sleep: Poll and EpollWait, bounded waits for a poll loop
// that never parks in Go (wait_linux.go says why they, too, keep their
// P); ReserveP and ReleaseP keep a P idle for the rest of the process
// while such loops sleep (procs.go); a Yielder takes such a loop through
// the scheduler before the runtime would preempt it (yield.go).
//
// The parked set (parked_linux.go) is one process-wide epoll set of the
// data path's descriptors that goroutines wait on in the runtime's
// poller; a loop that spins instead of parking looks at it each pass
// (ParkedReady) and parks as soon as another member is ready.
//
// # Ownership, goroutines, buffers
//
// Stateless but for the count of P-keeping sleepers (procs.go, under a
// mutex) and the parked set's epoll descriptor (made once, never closed;
// members leave it when they are closed). Any goroutine; buffers are only read or written during the
// call. A Yielder belongs to the one loop goroutine that calls its Pass.
package nbsys
