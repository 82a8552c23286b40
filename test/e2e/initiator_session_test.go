package e2e

import (
	"context"
	"errors"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/test/verifyload"
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

// startLoad starts a verifying load of workers writers through s (see
// verifyload.Load): 4 KiB blocks, 16 per worker.
func startLoad(t *testing.T, s *initiator.Session, workers int) *verifyload.Load {
	return verifyload.Start(t, verifyload.Config{BlockSize: 4096, Slots: 16, Timeout: 30 * time.Second},
		verifyload.Repeat(s, workers))
}

// TestSessionQPErrorReplayed: QP errors injected into the I/O queues
// mid-I/O lose the controller; the session reconnects and replays, and
// the callers see no error.
func TestSessionQPErrorReplayed(t *testing.T) {
	forProfiles(t, func(t *testing.T, p soft.Profile) {
		e := newEnv(t, envConfig{profile: p, blockSize: 512, blocks: 16384})
		rec := &qpRecorder{Provider: e.hostP}
		s := e.session(t, []string{e.addr}, func(o *initiator.SessionOptions) { o.Provider = rec })
		load := startLoad(t, s, 4)
		// At least 3 rounds, and more until one hit a command in flight.
		for round := 0; round < 3 || s.Replays() == 0 && round < 20; round++ {
			load.WaitOps(50)
			connects := s.Paths()[0].Connects
			if rec.injectAll() == 0 {
				t.Fatal("no QP to inject an error into")
			}
			waitConnects(t, s, 0, connects, 30*time.Second)
		}
		load.WaitOps(50)
		load.Finish()
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
		rec := &qpRecorder{Provider: e.hostP}
		s := e.session(t, []string{e.addr, addrB}, func(o *initiator.SessionOptions) { o.Provider = rec })
		verifyload.WaitPath(t, s, 1, initiator.PathLive, false, 30*time.Second)
		verifyload.WaitPath(t, s, 0, initiator.PathLive, true, 30*time.Second)
		if !s.Paths()[0].Preferred {
			t.Fatalf("paths %+v: the first path should be preferred", s.Paths())
		}
		load := startLoad(t, s, 4)
		load.WaitOps(50)

		// Fail over: the preferred path's listener goes away and its
		// connections are cut.
		e.ln.Close()
		rec.cutAll(e.addr)
		verifyload.WaitPath(t, s, 1, initiator.PathLive, true, 30*time.Second)
		load.WaitOps(100)
		if st := s.Paths()[0].State; st == initiator.PathLive {
			t.Fatalf("path 0 live without a listener")
		}

		// Fail back.
		e.ln = e.listen(t, e.addr, 1)
		verifyload.WaitPath(t, s, 0, initiator.PathLive, true, 30*time.Second)
		load.WaitOps(100)
		load.Finish()
	})
}
