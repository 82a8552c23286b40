package initiator_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// Session tests: reconnect with replay and multipath, over the in-process
// soft fabric, on both profiles.

func (e *env) session(t *testing.T, paths []string, mod func(*initiator.SessionOptions)) *initiator.Session {
	t.Helper()
	o := initiator.SessionOptions{
		Options: e.opts(), SubNQN: subNQN, Paths: paths,
		ReconnectDelay: 20 * time.Millisecond, CtrlLossTimeout: 30 * time.Second,
	}
	o.IOQueues, o.QueueDepth, o.KeepAlive = 2, 16, 2*time.Second
	if mod != nil {
		mod(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := initiator.OpenSession(ctx, o)
	if err != nil {
		t.Fatalf("OpenSession: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// listen adds a listener of e's target at addr.
func (e *env) listen(t *testing.T, addr string, port uint16) *rdma.Listener {
	t.Helper()
	l, err := rdma.Listen(rdma.Config{Provider: e.tgtP, Target: e.tgt, Addr: addr, PortID: port,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// verifyLoad runs writers that each own a region, write a block with a
// new version, read it back, and record what was acknowledged; any
// error or mismatch fails the test. stop ends it; check verifies the
// whole model afterwards.
type verifyLoad struct {
	t       *testing.T
	s       *initiator.Session
	bs      int
	workers int
	slots   int
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	acked   map[int64][]byte
	ops     atomic.Int64
}

func startLoad(t *testing.T, s *initiator.Session, workers int) *verifyLoad {
	l := &verifyLoad{t: t, s: s, bs: 4096, workers: workers, slots: 16, stop: make(chan struct{}), acked: map[int64][]byte{}}
	for w := 0; w < workers; w++ {
		l.wg.Add(1)
		go l.run(w)
	}
	return l
}

func (l *verifyLoad) run(w int) {
	defer l.wg.Done()
	got := make([]byte, l.bs)
	for i := 0; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		off := int64(w*l.slots+i%l.slots) * int64(l.bs)
		p := make([]byte, l.bs)
		for k := 0; k < l.bs; k += 8 {
			binary.LittleEndian.PutUint64(p[k:], uint64(w)<<48|uint64(i)<<16|uint64(k))
		}
		if _, err := l.s.WriteAt(p, off); err != nil {
			l.t.Errorf("worker %d: write at %d: %v", w, off, err)
			return
		}
		l.mu.Lock()
		l.acked[off] = p
		l.mu.Unlock()
		if _, err := l.s.ReadAt(got, off); err != nil {
			l.t.Errorf("worker %d: read at %d: %v", w, off, err)
			return
		}
		if !bytes.Equal(got, p) {
			l.t.Errorf("worker %d: read at %d returned something other than the acknowledged write", w, off)
			return
		}
		l.ops.Add(1)
	}
}

// waitOps waits until n more operations completed (the load is running).
func (l *verifyLoad) waitOps(n int64) {
	l.t.Helper()
	target := l.ops.Load() + n
	deadline := time.Now().Add(30 * time.Second)
	for l.ops.Load() < target {
		if time.Now().After(deadline) {
			l.t.Fatalf("load stalled at %d ops", l.ops.Load())
		}
		time.Sleep(time.Millisecond) // polling a counter, not synchronising
	}
}

func (l *verifyLoad) finish() {
	l.t.Helper()
	close(l.stop)
	l.wg.Wait()
	got := make([]byte, l.bs)
	for off, want := range l.acked {
		if _, err := l.s.ReadAt(got, off); err != nil {
			l.t.Fatalf("final read at %d: %v", off, err)
		}
		if !bytes.Equal(got, want) {
			l.t.Fatalf("final read at %d differs from the last acknowledged write", off)
		}
	}
}

// waitPath waits until path i is in state st (and preferred when pref).
func waitPath(t *testing.T, s *initiator.Session, i int, st initiator.PathState, pref bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := s.Changed()
		p := s.Paths()[i]
		if p.State == st && (!pref || p.Preferred) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("path %d: %+v, want %v preferred=%v", i, p, st, pref)
		}
	}
}

// TestSessionQPErrorReplayed: QP errors injected into the I/O queues
// mid-I/O lose the controller; the session reconnects and replays, and
// the callers see no error.
func TestSessionQPErrorReplayed(t *testing.T) {
	forProfiles(t, func(t *testing.T, p soft.Profile) {
		e := newEnv(t, envConfig{profile: p, blockSize: 512, blocks: 16384})
		s := e.session(t, []string{e.addr}, nil)
		load := startLoad(t, s, 4)
		for round := 0; round < 3; round++ {
			load.waitOps(50)
			c := initiator.SessionController(s, 0)
			if c == nil {
				t.Fatal("no live controller")
			}
			for _, qp := range initiator.QueuePairs(c) {
				if err := soft.InjectQPError(qp); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-c.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("controller not lost after QP errors")
			}
			waitPath(t, s, 0, initiator.PathLive, true)
		}
		load.waitOps(50)
		load.finish()
		if s.Replays() == 0 {
			t.Fatal("no command was replayed")
		}
		if got := s.Paths()[0].Connects; got < 4 {
			t.Fatalf("path connected %d times, want ≥ 4", got)
		}
	})
}

// TestSessionCtrlLossTimeout: with the target gone for good, I/O fails
// with ErrControllerLost and EIO once ctrl-loss-tmo expires, and later
// calls fail at once: no hang.
func TestSessionCtrlLossTimeout(t *testing.T) {
	e := newEnv(t, envConfig{profile: soft.ProfileDefault})
	s := e.session(t, []string{e.addr}, func(o *initiator.SessionOptions) {
		o.CtrlLossTimeout = 300 * time.Millisecond
		o.ReconnectDelay = 50 * time.Millisecond
		o.ConnectTimeout = time.Second
	})
	buf := make([]byte, 4096)
	if _, err := s.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	e.ln.Close() // drains and disconnects; no listener to come back to
	errc := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			var err error
			for err == nil {
				_, err = s.ReadAt(make([]byte, 4096), 0)
			}
			errc <- err
		}()
	}
	for i := 0; i < 4; i++ {
		select {
		case err := <-errc:
			if !errors.Is(err, initiator.ErrControllerLost) || !errors.Is(err, syscall.EIO) {
				t.Fatalf("err = %v, want ErrControllerLost and EIO", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("I/O hangs after ctrl-loss-tmo")
		}
	}
	start := time.Now()
	if _, err := s.WriteAt(buf, 0); !errors.Is(err, syscall.EIO) {
		t.Fatalf("later write: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("later write took %v after the timeout expired", d)
	}
}

// TestSessionMultipathFailoverFailback: two listeners of one target; the
// preferred path dies with I/O running → I/O continues on the other
// without errors; the preferred path returns → I/O fails back to it.
func TestSessionMultipathFailoverFailback(t *testing.T) {
	forProfiles(t, func(t *testing.T, p soft.Profile) {
		e := newEnv(t, envConfig{profile: p, blockSize: 512, blocks: 16384})
		const addrB = "192.0.2.2:4420"
		e.listen(t, addrB, 2)
		s := e.session(t, []string{e.addr, addrB}, nil)
		waitPath(t, s, 1, initiator.PathLive, false)
		waitPath(t, s, 0, initiator.PathLive, true)
		if !s.Paths()[0].Preferred {
			t.Fatalf("paths %+v: the first path should be preferred", s.Paths())
		}
		load := startLoad(t, s, 4)
		load.waitOps(50)

		// Fail over: the preferred path's listener goes away and its
		// connections are cut.
		c := initiator.SessionController(s, 0)
		e.ln.Close()
		for _, id := range initiator.ConnIDs(c) {
			_ = soft.CutLink(id)
		}
		waitPath(t, s, 1, initiator.PathLive, true)
		load.waitOps(100)
		if st := s.Paths()[0].State; st == initiator.PathLive {
			t.Fatalf("path 0 live without a listener")
		}

		// Fail back.
		e.ln = e.listen(t, e.addr, 1)
		waitPath(t, s, 0, initiator.PathLive, true)
		load.waitOps(100)
		load.finish()
	})
}
