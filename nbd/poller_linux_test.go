package nbd_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/nbd"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
)

func init() {
	contractVariants = append(contractVariants, contractVariant{"async-poller", func(t *testing.T) wrapFn {
		return func(m *memBackend) nbd.Backend { return &pollMem{asyncMem: &asyncMem{memBackend: m, t: t}} }
	}})
}

// pollMem is an asyncMem whose queues are nbd.Pollers, like the initiator
// Submitter: Submit holds requests until Kick; a worker goroutine executes
// them and reports each completion on an eventfd (the descriptor Arm
// returns), and Arm completes the reported ones on the caller's
// goroutine. To cover every way a completion reaches the connection's
// poll loop, one request in three is completed by the worker itself (a
// completion from another goroutine) and one in five is announced with
// the waker instead of the eventfd. Without SetWaker (no loop) the worker
// completes every request.
type pollMem struct {
	*asyncMem
	arms, wakes atomic.Int32
}

func (p *pollMem) OpenQueue(depth int) (nbd.AsyncQueue, error) {
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	q := &pollQueue{memQueue: &memQueue{a: p.asyncMem, busy: make([]bool, depth)}, pm: p, efd: efd,
		work: make(chan *nbd.Request, depth), stopped: make(chan struct{})}
	go q.worker()
	return q, nil
}

type pollQueue struct {
	*memQueue
	pm      *pollMem
	efd     int
	waker   func() // set before the first Submit (read by the worker after it)
	pending []*nbd.Request
	work    chan *nbd.Request
	stopped chan struct{}

	doneMu   sync.Mutex
	done     []doneReq // executed, waiting for Arm
	spare    []doneReq // Arm's other slice (no allocation per batch)
	inFlight atomic.Int32
	released atomic.Bool
}

type doneReq struct {
	r   *nbd.Request
	err error
}

func (q *pollQueue) SetWaker(wake func()) { q.waker = wake }

func (q *pollQueue) Submit(r *nbd.Request) {
	q.take(r)
	q.inFlight.Add(1)
	q.pending = append(q.pending, r)
}

func (q *pollQueue) Kick() {
	q.a.kicks.Add(1)
	for _, r := range q.pending {
		q.work <- r
	}
	q.pending = q.pending[:0]
}

func (q *pollQueue) Arm(signalled bool) (int, uint64) {
	q.pm.arms.Add(1)
	if q.released.Load() {
		q.a.t.Error("Arm after Release")
	}
	if signalled {
		var b [8]byte
		_, _ = unix.Read(q.efd, b[:])
	}
	q.doneMu.Lock()
	done := q.done
	q.done = q.spare[:0]
	q.doneMu.Unlock()
	for _, d := range done {
		q.finish(d.r, d.err)
	}
	clear(done)
	q.doneMu.Lock()
	q.spare = done[:0]
	q.doneMu.Unlock()
	if q.inFlight.Load() == 0 {
		return -1, 1
	}
	return q.efd, 1
}

func (q *pollQueue) Release() {
	if n := q.inFlight.Load(); n != 0 {
		q.a.t.Errorf("Release with %d requests in flight", n)
	}
	q.released.Store(true)
}

// finish completes r: slot bookkeeping, then the NBD completion.
func (q *pollQueue) finish(r *nbd.Request, err error) {
	q.inFlight.Add(-1)
	q.complete(r, err)
}

func (q *pollQueue) worker() {
	defer close(q.stopped)
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	k := 0
	for r := range q.work {
		err := q.a.exec(r)
		k++
		if q.waker == nil || k%3 == 0 {
			q.finish(r, err)
			continue
		}
		q.doneMu.Lock()
		q.done = append(q.done, doneReq{r, err})
		q.doneMu.Unlock()
		if k%5 == 0 {
			q.pm.wakes.Add(1)
			q.waker()
		} else {
			_, _ = unix.Write(q.efd, one[:])
		}
	}
}

func (q *pollQueue) Close() {
	close(q.work)
	<-q.stopped
	q.memQueue.Close()
	unix.Close(q.efd)
}

// TestPollLoop: over a Unix socket (adopted: served by descriptor) a
// Poller's connection runs its poll loop — Arm is called, completions
// announced by the waker and from other goroutines arrive — with
// concurrent writes and reads that read back what was written, and
// Server.Close ends a connection whose loop sleeps idle.
func TestPollLoop(t *testing.T) {
	m := newMem(4<<20, 512)
	pm := &pollMem{asyncMem: &asyncMem{memBackend: m, t: t}}
	s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: pm}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	c, err := nbdtest.Dial("unix", l.Addr().String(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, got := make([]byte, 4096), make([]byte, 4096)
			for i := range 60 {
				off := int64(g)*256<<10 + int64(i%64)*4096
				binary.LittleEndian.PutUint64(p, uint64(off)^uint64(i))
				if _, err := c.WriteAt(p, off); err != nil {
					t.Error(err)
					return
				}
				if _, err := c.ReadAt(got, off); err != nil || !bytes.Equal(got, p) {
					t.Errorf("goroutine %d: read back %v", g, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if pm.arms.Load() == 0 || pm.wakes.Load() == 0 {
		t.Fatalf("the connection did not run its poll loop: %d arms, %d waker calls", pm.arms.Load(), pm.wakes.Load())
	}
	// Left idle, the loop soon sleeps without its P (nbsys.IdleThreshold empty
	// sleeps of at most 50 ms each), and a request still wakes it.
	idle := nbd.IdleSleeps()
	for deadline := time.Now().Add(20 * time.Second); nbd.IdleSleeps() == idle; {
		if time.Now().After(deadline) {
			t.Fatal("an idle connection's loop never slept without its P")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := c.ReadAt(make([]byte, 4096), 0); err != nil {
		t.Fatalf("a read after the loop slept idle: %v", err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Server.Close did not end a connection whose loop sleeps idle")
	}
	if err := <-served; !errors.Is(err, nbd.ErrServerClosed) {
		t.Fatal(err)
	}
	if _, err := c.ReadAt(make([]byte, 512), 0); !errors.Is(err, nbdtest.ErrClosed) {
		t.Fatalf("read after server close: %v", err)
	}
}

// TestSockConnTransmission: a socket served by descriptor (the kernel
// path's sockets) carries the transmission phase with the poll loop
// (Poller backend) and without it (blocking backend: Read blocks in
// poll(2)); the client's hang-up ends ServeTransmission, and Server.Close
// ends an idle one.
func TestSockConnTransmission(t *testing.T) {
	for _, mode := range []string{"poller", "blocking"} {
		t.Run(mode, func(t *testing.T) {
			m := newMem(1<<20, 512)
			var be nbd.Backend = m
			pm := &pollMem{asyncMem: &asyncMem{memBackend: m, t: t}}
			if mode == "poller" {
				be = pm
			}
			s, err := nbd.NewServer(nbd.Options{Exports: []*nbd.Export{{Backend: be}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, end := range []string{"hang-up", "server close"} {
				fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				sv, err := nbd.NewSockConn(fds[1])
				if err != nil {
					t.Fatal(err)
				}
				f := os.NewFile(uintptr(fds[0]), "client")
				cl, err := net.FileConn(f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- s.ServeTransmission(sv, "") }()
				pumpReads(t, cl, 8, 500, func() {})
				if end == "hang-up" {
					cl.Close()
				} else {
					s.Close()
				}
				select {
				case err := <-done:
					if err != nil && end == "hang-up" {
						t.Fatal(err)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("%s did not end the transmission", end)
				}
				cl.Close()
			}
			if mode == "poller" && pm.arms.Load() == 0 {
				t.Fatal("the poll loop did not run")
			}
		})
	}
}

// TestPollLoopReadsAllocateNothing: the poll loop's path (a Poller over
// a socket served by descriptor) allocates nothing per read either.
func TestPollLoopReadsAllocateNothing(t *testing.T) {
	for _, qd := range []int{1, 32} {
		m := newMem(1<<20, 512)
		readsAllocateNothing(t, &pollMem{asyncMem: &asyncMem{memBackend: m, t: t}}, qd)
	}
}
