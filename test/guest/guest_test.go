package guest

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/attach"
	"github.com/rdmablk/rdmablk/nbd/nbdtest"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/test/verifyload"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

var profiles = []struct {
	name string
	p    soft.Profile
}{{"default", soft.ProfileDefault}, {"pvrdma", soft.ProfilePVRDMA}}

// rig is an in-process target (one memory volume) on a soft fabric.
type rig struct {
	fab  *soft.Fabric
	tgtP *soft.Provider
	tgt  *target.Target
	lns  map[string]*rdma.Listener
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{fab: soft.NewFabric(), lns: map[string]*rdma.Listener{}}
	r.tgtP = soft.New(soft.Options{Fabric: r.fab})
	r.tgt = target.New(target.Options{Logger: quiet()})
	be := mem.New(32768, 512)
	if _, err := r.tgt.AddSubsystem(target.SubsystemConfig{NQN: testNQN, AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: be}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, l := range r.lns {
			l.Close()
		}
		r.tgt.Close()
		be.Close()
	})
	return r
}

func (r *rig) listen(t *testing.T, addr string, port uint16) {
	t.Helper()
	l, err := rdma.Listen(rdma.Config{Provider: r.tgtP, Target: r.tgt, Addr: addr, PortID: port, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	r.lns[addr] = l
}

func (r *rig) unlisten(addr string) {
	r.lns[addr].Close()
	delete(r.lns, addr)
}

func (r *rig) host(p soft.Profile) *recProvider {
	return &recProvider{Provider: soft.New(soft.Options{Profile: p, Fabric: r.fab})}
}

// TestNBDVerifyTargetRestart: verifying load through the NBD export while
// rdmablkd (a separate process, soft provider over TCP) is SIGKILLed and
// restarted twice: no NBD request fails, every read returns what was
// last acknowledged, before and after the restarts.
func TestNBDVerifyTargetRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts rdmablkd")
	}
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			d := newDaemon(t, pr.name, 64<<20)
			d.start()
			a, sock := startAttachment(t, attach.Config{Paths: []string{d.addr}},
				initiator.Options{Provider: soft.New(soft.Options{Profile: pr.p})})
			load := startNBDLoad(t, sock, 2, 4)
			// At least 2 rounds, and more until a kill hit a command in
			// flight.
			for round := 0; round < 2 || a.Session().Replays() == 0 && round < 10; round++ {
				load.WaitOps(200)
				d.Kill()
				verifyload.WaitPath(t, a.Session(), 0, initiator.PathConnecting, false, 60*time.Second)
				d.start()
				verifyload.WaitPath(t, a.Session(), 0, initiator.PathLive, true, 60*time.Second)
			}
			load.WaitOps(200)
			load.Finish()
			if a.Session().Replays() == 0 {
				t.Error("no command was replayed: the kills did not hit in-flight I/O")
			}
			t.Logf("%d ops, %d replayed commands, %d connects", load.Ops(), a.Session().Replays(), a.Session().Paths()[0].Connects)
		})
	}
}

// TestNBDQPErrorReplayed: QP errors injected into every queue pair of the
// controller mid-I/O are replayed after the reconnect; NBD clients see no
// error.
func TestNBDQPErrorReplayed(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			r := newRig(t)
			r.listen(t, "192.0.2.1:4420", 1)
			hp := r.host(pr.p)
			a, sock := startAttachment(t, attach.Config{Paths: []string{"192.0.2.1:4420"}}, initiator.Options{Provider: hp})
			load := startNBDLoad(t, sock, 2, 4)
			// At least 3 rounds, and more until one hit a command in
			// flight (an injection between two commands loses the
			// controller without anything to replay).
			for round := 0; round < 3 || a.Session().Replays() == 0 && round < 20; round++ {
				load.WaitOps(100)
				ids := hp.live("")
				if len(ids) == 0 {
					t.Fatal("no live connections recorded")
				}
				for _, id := range ids {
					_ = soft.InjectQPError(id.QP())
				}
				for _, id := range ids {
					select {
					case <-id.Done():
					case <-time.After(30 * time.Second):
						// A QP that was idle notices only through keep
						// alive; the I/O queues were busy.
					}
				}
				verifyload.WaitPath(t, a.Session(), 0, initiator.PathLive, true, 60*time.Second)
			}
			load.WaitOps(100)
			load.Finish()
			if a.Session().Replays() == 0 {
				t.Error("no command was replayed")
			}
		})
	}
}

// TestNBDCtrlLossTimeout: the target goes away for good; NBD requests
// fail with EIO once ctrl-loss-tmo expires, promptly, and keep failing
// promptly; the export itself stays up.
func TestNBDCtrlLossTimeout(t *testing.T) {
	r := newRig(t)
	r.listen(t, "192.0.2.1:4420", 1)
	a, sock := startAttachment(t, attach.Config{Paths: []string{"192.0.2.1:4420"}, CtrlLossTimeout: 500 * time.Millisecond},
		initiator.Options{Provider: r.host(soft.ProfileDefault)})
	c, err := nbdtest.Dial("unix", sock, "vol")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 4096)
	if _, err := c.WriteAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	r.unlisten("192.0.2.1:4420")
	verifyload.WaitPath(t, a.Session(), 0, initiator.PathConnecting, false, 60*time.Second)
	lost := time.Now()
	_, err = c.ReadAt(buf, 0)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("read after the target left: %v, want EIO", err)
	}
	if d := time.Since(lost); d > 20*time.Second {
		t.Fatalf("EIO only after %v (ctrl-loss-tmo 500ms)", d)
	}
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := c.WriteAt(buf, 0); !errors.Is(err, syscall.EIO) {
			t.Fatalf("write: %v, want EIO", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("write took %v to fail after ctrl-loss-tmo", d)
		}
	}
}

// TestNBDMultipathFailoverFailback: two listeners of one target; the
// preferred path dies with NBD I/O running → I/O moves to the other path
// without errors; the path returns → I/O fails back to it.
func TestNBDMultipathFailoverFailback(t *testing.T) {
	for _, pr := range profiles {
		t.Run(pr.name, func(t *testing.T) {
			const pathA, pathB = "192.0.2.1:4420", "192.0.2.2:4420"
			r := newRig(t)
			r.listen(t, pathA, 1)
			r.listen(t, pathB, 2)
			hp := r.host(pr.p)
			a, sock := startAttachment(t, attach.Config{Paths: []string{pathA, pathB}}, initiator.Options{Provider: hp})
			s := a.Session()
			verifyload.WaitPath(t, s, 0, initiator.PathLive, true, 60*time.Second)
			verifyload.WaitPath(t, s, 1, initiator.PathLive, false, 60*time.Second)
			load := startNBDLoad(t, sock, 2, 4)
			load.WaitOps(100)

			ids := hp.live(pathA)
			r.unlisten(pathA)
			for _, id := range ids {
				_ = soft.CutLink(id)
			}
			verifyload.WaitPath(t, s, 1, initiator.PathLive, true, 60*time.Second)
			load.WaitOps(200)
			if s.Paths()[0].State == initiator.PathLive {
				t.Fatal("path A live without its listener")
			}

			r.listen(t, pathA, 1)
			verifyload.WaitPath(t, s, 0, initiator.PathLive, true, 60*time.Second)
			load.WaitOps(200)
			load.Finish()
			st := a.Status()
			if !st.Paths[0].Preferred || st.Paths[0].Connects < 2 {
				t.Fatalf("status after failback: %+v", st.Paths)
			}
		})
	}
}
