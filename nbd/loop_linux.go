package nbd

import (
	"encoding/binary"
	"net"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/internal/nbsys"
)

// loop is the poll loop of a connection served by descriptor (sockConn)
// whose AsyncQueue is a Poller: the connection's one goroutine reads
// requests, submits and kicks them, reaps their completions (Poller.Arm:
// the queue completes requests on this goroutine), writes the replies,
// and sleeps only in poll(2) — on the socket (when it wants input), the
// queue's descriptor (when Arm returns one) and an eventfd that other
// goroutines write when they leave it work (see poke and wakeup).
//
// While the loop runs, every Request.Complete and CompleteMore only
// queues its reply (conn.finish) and the loop writes the queued replies
// each time round, so the loop is the connection's only reply writer and
// the only goroutine that frees slots. A completion from another
// goroutine (a blocking request's own goroutine, the initiator queue's
// goroutine when the queue cannot be waited for on a descriptor) pokes:
// it bumps gen and, if the loop is asleep or about to sleep (active
// false), writes the eventfd. The loop clears active and then re-reads
// gen before it sleeps (both sequentially consistent atomics), so a poke
// either is seen by that check or sees active false and wakes poll.
type loop struct {
	cs *conn
	sc *sockConn
	p  Poller

	efd       int           // eventfd: pokes and the queue's waker
	active    atomic.Bool   // false while the loop sleeps (or is about to)
	gen       atomic.Uint64 // bumped by every poke
	deferring bool          // guarded by cs.wmu: finish queues for the loop
	signalled bool          // the queue's descriptor was readable since the last Arm
	pfd       [3]nbsys.PollFd
	yield     nbsys.Yielder   // passes through the scheduler before sysmon preempts the loop
	idle      nbsys.IdleWaits // when to sleep without the P
	one       [8]byte         // the eventfd's increment
	sink      [8]byte         // the eventfd's counter, read to reset it
}

// startLoop returns cs's loop when its socket and queue allow one, else
// nil (the reader then blocks in Read and completions are written by the
// goroutine that completes them).
func startLoop(cs *conn) *loop {
	sc, ok := cs.c.(*sockConn)
	p, pok := cs.q.(Poller)
	if !ok || !pok || cs.wake != nil {
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		cs.s.log.Debug("nbd: no eventfd; connection served without its poll loop", "err", err)
		return nil
	}
	l := &loop{cs: cs, sc: sc, p: p, efd: efd, deferring: true}
	binary.NativeEndian.PutUint64(l.one[:], 1)
	l.active.Store(true)
	p.SetWaker(l.wakeup)
	return l
}

// wakeup makes the loop's poll return (the eventfd becomes readable).
// Any goroutine; never blocks.
func (l *loop) wakeup() { _, _ = nbsys.Write(uintptr(l.efd), l.one[:]) }

// poke tells the loop it has work (a queued reply): gen, then a wake-up
// unless the loop is running and will see gen before it sleeps.
func (l *loop) poke() {
	l.gen.Add(1)
	if !l.active.Load() {
		l.wakeup()
	}
}

// What a wait waits for.
const (
	waitInput = iota // the socket is readable (or hung up)
	waitSlot         // a free request slot
	waitDrain        // every slot free: every request replied
)

// ready reports whether the wait for what is over.
func (l *loop) ready(what int) bool {
	switch what {
	case waitSlot:
		return len(l.cs.free) > 0 // only the loop frees slots
	case waitDrain:
		return len(l.cs.free) == l.cs.s.maxIn
	}
	return false
}

// service issues what Submit held, arms the queue (reaping what
// completed: the requests complete here) and writes the queued replies.
// It returns the descriptor to wait for (< 0: none).
func (l *loop) service() int {
	l.cs.kick()
	fd, _ := l.p.Arm(l.signalled)
	l.signalled = false
	l.cs.writePending()
	return fd
}

// wait runs the loop until what is ready: service, then sleep in poll(2)
// until the socket, the queue's descriptor or the eventfd is readable.
func (l *loop) wait(what int) {
	for {
		l.yield.Pass()
		seen := l.gen.Load()
		fd := l.service()
		if l.ready(what) {
			return
		}
		l.active.Store(false)
		if l.gen.Load() != seen {
			l.active.Store(true)
			continue // a poke since this round began: its reply is queued
		}
		n := 0
		l.pfd[n] = nbsys.PollFd{Fd: int32(l.efd), Events: unix.POLLIN}
		n++
		cq, sock := -1, -1
		if fd >= 0 {
			cq = n
			l.pfd[n] = nbsys.PollFd{Fd: int32(fd), Events: unix.POLLIN}
			n++
		}
		if what == waitInput {
			sock = n
			l.pfd[n] = nbsys.PollFd{Fd: int32(l.sc.fd), Events: unix.POLLIN}
			n++
		}
		var e syscall.Errno
		if l.idle.Idle() {
			idleSleeps.Add(1)
			_, e = nbsys.PollBlocking(l.pfd[:n])
			runtime.Gosched()
		} else {
			var got int
			got, e = nbsys.Poll(l.pfd[:n], parkTimeout)
			l.idle.Ended(got > 0) // none: the timeout, or a signal (EINTR)
		}
		l.active.Store(true)
		if e != 0 {
			continue // EINTR; nothing else is expected of three valid descriptors
		}
		if l.pfd[0].Revents != 0 {
			_, _ = nbsys.Read(uintptr(l.efd), l.sink[:])
		}
		if cq >= 0 && l.pfd[cq].Revents != 0 {
			l.signalled = true
		}
		if sock >= 0 && l.pfd[sock].Revents != 0 {
			if l.signalled {
				l.service() // reap before reading on
			}
			return
		}
	}
}

// Read implements io.Reader for the connection's read buffer: one
// non-blocking read, and the loop while there is nothing to read.
func (l *loop) Read(p []byte) (int, error) {
	for {
		n, err := l.sc.readOnce(p)
		if err != errAgain {
			return n, err
		}
		l.wait(waitInput)
	}
}

// takeSlot waits for a free slot (every slot is in flight).
func (l *loop) takeSlot() int32 {
	for {
		select {
		case s := <-l.cs.free:
			return s
		default:
		}
		l.wait(waitSlot)
	}
}

// stop waits until every request replied, gives the queue its
// completions back and closes the eventfd. The connection's goroutine,
// after its last Submit.
func (l *loop) stop() {
	l.wait(waitDrain)
	l.cs.wmu.Lock()
	l.deferring = false
	l.cs.wmu.Unlock()
	l.p.Release()
	unix.Close(l.efd)
}

// holdConn reserves c's descriptor for transmit when it is served by
// descriptor (release ends that); false when c was closed already.
func holdConn(c net.Conn) (release func(), ok bool) {
	sc, isSock := c.(*sockConn)
	if !isSock {
		return func() {}, true
	}
	if !sc.hold() {
		return nil, false
	}
	return sc.done, true
}

// adopt makes a socket of the net package (a Unix or TCP connection, past
// its handshake) a sockConn on a duplicate of its descriptor, tracked by
// the server in c's place, and closes c; nil when c is another kind of
// connection or the server is closing (c stays as it is).
func (s *Server) adopt(c net.Conn) net.Conn {
	switch c.(type) {
	case *net.UnixConn, *net.TCPConn:
	default:
		return nil
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return nil
	}
	dup := -1
	if err := rc.Control(func(fd uintptr) { dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil || dup < 0 {
		return nil
	}
	sc, err := newSockConn(dup)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		sc.Close()
		return nil
	}
	delete(s.conns, c)
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	c.Close() // the socket stays open on sc's descriptor
	return sc
}

// unadopt ends the tracking adopt began and closes sc (its descriptor
// once transmit let go of it).
func (s *Server) unadopt(sc net.Conn) {
	s.mu.Lock()
	delete(s.conns, sc)
	s.mu.Unlock()
	sc.Close()
}

// parkTimeout bounds one sleep of the loop (nbsys.Poll: the goroutine
// keeps its P while it sleeps, and a runtime that sends no preemption
// signals must still get it back).
const parkTimeout = 50 * time.Millisecond

// idleSleeps counts the loops' sleeps without the P (for tests).
var idleSleeps atomic.Uint64
