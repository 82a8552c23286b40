package e2e

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/test/testproc"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestSharedQueuesFillDepth: many more callers than queues — half of
// them blocking ReadAt, half asynchronous Submit — share 2 queues of depth
// 8. With the backend holding every read, the target has received exactly
// queues × depth I/O commands and completed none: every slot of every
// queue is in flight, no caller owns a queue, and the rest wait in the
// submission layer. Once released, every request completes.
func TestSharedQueuesFillDepth(t *testing.T) {
	for _, tc := range transports {
		if tc.digests {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			fab := soft.NewFabric()
			g := newGated(mem.New(4096, 512))
			tgt, ls := fabricTarget(t, fab, g, "shared:4420")
			t.Cleanup(g.release) // before the target closes
			path := ls[0].Addr()
			if tc.tcp {
				path = listenPath(t, tgt, fab, true, "", 2).addr
			}
			// No keep alive: no admin command may land between the
			// target's two counter updates while we compare them.
			s := openSession(t, soft.New(soft.Options{Profile: tc.profile, Fabric: fab}), []string{path}, 2, 8,
				func(o *initiator.SessionOptions) { o.KeepAlive = -1 })
			st := s.Stats()
			if st.Queues != 2 || st.QueueDepth < 2 {
				t.Fatalf("session has %d queues of depth %d", st.Queues, st.QueueDepth)
			}
			want := st.Queues * st.QueueDepth
			const callers = 64
			if callers < 4*want {
				t.Fatalf("%d callers for %d slots: not ≫", callers, want)
			}
			base := tgt.Stats()

			errs := make(chan error, callers/2)
			for i := 0; i < callers/2; i++ {
				go func(i int) {
					_, err := s.ReadAt(make([]byte, 4096), int64(i)*4096)
					errs <- err
				}(i)
			}
			done := make(chan *initiator.Request, callers/2)
			reqs := make([]initiator.Request, callers/2)
			for i := range reqs {
				reqs[i] = initiator.Request{Op: initiator.IORead, Off: int64(callers/2+i) * 4096,
					Data: make([]byte, 4096), Done: done}
				if err := s.Submit(&reqs[i]); err != nil {
					t.Fatal(err)
				}
			}

			g.waitHeld(t, want, time.Minute)
			held := tgt.Stats()
			if held.AdminCommands != base.AdminCommands {
				t.Fatalf("%d admin commands during the hold", held.AdminCommands-base.AdminCommands)
			}
			if got := held.Commands - base.Commands; got != uint64(want) {
				t.Fatalf("target received %d I/O commands while reads are held, want queues × depth = %d", got, want)
			}
			if held.ReadCommands != base.ReadCommands {
				t.Fatalf("target completed %d reads while all are held", held.ReadCommands-base.ReadCommands)
			}
			st = s.Stats()
			for k, n := range st.QueueInFlight {
				if n != st.QueueDepth {
					t.Fatalf("queue %d has %d commands in flight, want its depth %d", k, n, st.QueueDepth)
				}
			}
			// The asynchronous half is submitted by now (the blocking
			// goroutines may still be starting): more requests are in
			// flight than the queues have slots, and they wait in the
			// submission layer, not in a queue a caller owns.
			if st.InFlight < callers/2 || st.InFlight > callers || st.InFlight <= int64(want) {
				t.Fatalf("session counts %d requests in flight, want %d..%d (> %d slots)", st.InFlight, callers/2, callers, want)
			}

			g.release()
			for range callers / 2 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
				if r := <-done; r.Err != nil || r.N != 4096 {
					t.Fatalf("async read: %d %v", r.N, r.Err)
				}
			}
			end := tgt.Stats()
			if got := end.ReadCommands - base.ReadCommands; got != callers {
				t.Fatalf("target completed %d reads, want %d", got, callers)
			}
			if g.max != want {
				t.Fatalf("at most %d reads reached the backend at once, want %d", g.max, want)
			}
		})
	}
}

// waitConnects waits until path i is live with more than n connects.
func waitConnects(t *testing.T, s *initiator.Session, i, n int, timeout time.Duration) {
	t.Helper()
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	for {
		ch := s.Changed()
		if p := s.Paths()[i]; p.State == initiator.PathLive && p.Connects > n {
			return
		}
		select {
		case <-ch:
		case <-tm.C:
			t.Fatalf("path %d not reconnected within %v: %+v", i, timeout, s.Paths()[i])
		}
	}
}

// waitInFlight waits until the live path's queues hold n commands, or the
// path has left the live state (its commands are then queued for replay).
func waitInFlight(t *testing.T, s *initiator.Session, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := s.Stats()
		sum := 0
		for _, q := range st.QueueInFlight {
			sum += q
		}
		if sum >= n || s.Paths()[0].State != initiator.PathLive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d commands in flight after %v: %+v", sum, n, timeout, st)
		}
		time.Sleep(time.Millisecond) // polling a condition, not a timing assumption
	}
}

// TestAsyncReplayQPErrors: QP errors injected into every queue of the
// live controller while Submit keeps 24 write/read-verify requests in
// flight: the controller is lost, the session reconnects and replays the
// failed commands, and no request sees an error or wrong data.
func TestAsyncReplayQPErrors(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			fab := soft.NewFabric()
			_, ls := fabricTarget(t, fab, mem.New(16384, 512), "replay:4420")
			rec := &qpRecorder{Provider: soft.New(soft.Options{Profile: pr.p, Fabric: fab})}
			s := openSession(t, rec, []string{ls[0].Addr()}, 2, 16)
			load := startAsyncLoad(t, s, 24, 64)
			for round := 0; round < 3; round++ {
				load.waitVerified(t, 50, time.Minute)
				connects := s.Paths()[0].Connects
				if rec.injectAll() == 0 {
					t.Fatal("no QP to inject an error into")
				}
				waitConnects(t, s, 0, connects, time.Minute)
			}
			load.waitVerified(t, 50, time.Minute)
			load.finish(t)
			if s.Replays() == 0 {
				t.Fatal("no command was replayed")
			}
		})
	}
}

// TestAsyncReplayTargetSIGKILL: rdmablkd (a child process, soft provider
// over TCP) is killed with SIGKILL and restarted on the same address
// while Submit keeps write/read-verify requests in flight: every command
// in flight at the kill is replayed after the reconnect, and no request
// sees an error or wrong data.
func TestAsyncReplayTargetSIGKILL(t *testing.T) {
	bin := testproc.BuildGoBinary(t, "github.com/rdmablk/rdmablk/cmd/rdmablkd")
	for _, pr := range []string{"default", "pvrdma"} {
		t.Run(pr, func(t *testing.T) {
			dir := t.TempDir()
			addr := testproc.FreePort(t)
			cfg := filepath.Join(dir, "rdmablkd.yaml")
			if err := os.WriteFile(cfg, testproc.SoftVolumeConfig(dir, pr, addr, 16<<20, testNQN), 0o600); err != nil {
				t.Fatal(err)
			}
			d := testproc.New(t, bin)
			d.Start("--config", cfg)
			d.WaitLog("rdmablkd ready", time.Minute)
			prof := soft.ProfileDefault
			if pr == "pvrdma" {
				prof = soft.ProfilePVRDMA
			}
			s := openSession(t, soft.New(soft.Options{Profile: prof}), []string{addr}, 2, 16)
			load := startAsyncLoad(t, s, 16, 64)
			load.waitVerified(t, 30, time.Minute)
			connects := s.Paths()[0].Connects
			// Stop the daemon before killing it so that commands are
			// certainly in flight at the kill: a stopped target answers
			// nothing, the load refills every slot, and those commands
			// can only complete by being replayed. Without this, the
			// load's completion goroutine can be descheduled with all
			// its requests answered, and nothing is in flight to replay.
			if err := d.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			waitInFlight(t, s, 16, time.Minute)
			d.Kill()
			d.Start("--config", cfg)
			d.WaitLog("rdmablkd ready", time.Minute)
			waitConnects(t, s, 0, connects, time.Minute)
			load.waitVerified(t, 30, time.Minute)
			load.finish(t)
			if s.Replays() == 0 {
				t.Fatal("no command was replayed across the kill")
			}
		})
	}
}

// TestAsyncMultipathFailover: two listeners (ports) of one target; the
// asynchronous load runs on the first path, the first listener goes away,
// I/O continues on the second path without an error, and fails back when
// the first listener returns. Path choice is a lock-free table lookup;
// the test runs under -race with the path table swapped under live I/O.
func TestAsyncMultipathFailover(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			fab := soft.NewFabric()
			tgt, ls := fabricTarget(t, fab, mem.New(16384, 512), "mp-a:4420", "mp-b:4420")
			s := openSession(t, soft.New(soft.Options{Profile: pr.p, Fabric: fab}), []string{ls[0].Addr(), ls[1].Addr()}, 2, 16)
			waitConnects(t, s, 1, 0, time.Minute)
			load := startAsyncLoad(t, s, 16, 64)
			load.waitVerified(t, 30, time.Minute)
			b0 := ls[1].Stats().BytesToHost
			if err := ls[0].Close(); err != nil {
				t.Fatal(err)
			}
			load.waitVerified(t, 30, time.Minute)
			if ls[1].Stats().BytesToHost == b0 {
				t.Fatal("no reads went to the second path after the first went away")
			}
			connects := s.Paths()[0].Connects
			l, err := rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{Fabric: fab}), Target: tgt,
				Addr: "mp-a:4420", PortID: 1, Logger: quietLogger()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			waitConnects(t, s, 0, connects, time.Minute)
			a0 := l.Stats().BytesToHost
			load.waitVerified(t, 30, time.Minute)
			if l.Stats().BytesToHost == a0 {
				t.Fatal("I/O did not fail back to the first path")
			}
			load.finish(t)
		})
	}
}
