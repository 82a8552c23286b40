package e2e

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/test/verifyload"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// waitPaths waits until ok holds for the session's paths.
func waitPaths(t *testing.T, s *initiator.Session, what string, ok func([]initiator.PathInfo) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := s.Changed()
		ps := s.Paths()
		if ok(ps) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: paths %+v", what, ps)
		}
	}
}

// readBytes is the data a listener sent to hosts (reads and log pages).
func readBytes(l *rdma.Listener) uint64 { return l.Stats().BytesToHost }

// trafficTo runs the load for n more operations and returns the bytes
// each listener sent meanwhile.
func trafficTo(load *verifyload.Load, a, b *rdma.Listener, n int64) (da, db uint64) {
	a0, b0 := readBytes(a), readBytes(b)
	load.WaitOps(n)
	return readBytes(a) - a0, readBytes(b) - b0
}

// TestSessionANAFailoverFailback: two listeners (ports) of one target
// serving one namespace; the target reports ANA per port. Port A is
// optimized and port B non-optimized, so I/O goes to A although B is
// listed first. A turns inaccessible while I/O runs → the session moves
// to B (the ANA status is a path error, the ANA change notice re-reads
// the log) and no caller sees an error. A turns optimized again → the
// session fails back to A.
func TestSessionANAFailoverFailback(t *testing.T) {
	forProfiles(t, func(t *testing.T, p soft.Profile) {
		e := newEnv(t, envConfig{profile: p, blockSize: 512, blocks: 16384})
		const portA, portB = 1, 2
		const addrB = "192.0.2.2:4420"
		lnB := e.listen(t, addrB, portB)
		if err := e.tgt.SetANAState(portB, target.DefaultANAGroup, nvme.ANAStateNonOptimized); err != nil {
			t.Fatal(err)
		}
		s := e.session(t, []string{addrB, e.addr}, nil)
		const b, a = 0, 1 // indexes in Paths
		waitPaths(t, s, "A optimized and preferred, B non-optimized", func(ps []initiator.PathInfo) bool {
			return ps[a].State == initiator.PathLive && ps[a].Preferred && ps[a].ANA == nvme.ANAStateOptimized &&
				ps[b].State == initiator.PathLive && ps[b].ANA == nvme.ANAStateNonOptimized
		})

		load := startLoad(t, s, 4)
		load.WaitOps(20)
		da, db := trafficTo(load, e.ln, lnB, 100)
		if da == 0 || db > da/10 {
			t.Fatalf("with A optimized: %d bytes read through A, %d through B", da, db)
		}

		// Fail over: A inaccessible with I/O running.
		if err := e.tgt.SetANAState(portA, target.DefaultANAGroup, nvme.ANAStateInaccessible); err != nil {
			t.Fatal(err)
		}
		waitPaths(t, s, "B preferred, A inaccessible", func(ps []initiator.PathInfo) bool {
			return ps[b].Preferred && ps[a].ANA == nvme.ANAStateInaccessible && ps[a].State == initiator.PathLive
		})
		load.WaitOps(20)
		da, db = trafficTo(load, e.ln, lnB, 100)
		if db == 0 || da > db/10 {
			t.Fatalf("with A inaccessible: %d bytes read through A, %d through B", da, db)
		}

		// Fail back: A optimized again.
		if err := e.tgt.SetANAState(portA, target.DefaultANAGroup, nvme.ANAStateOptimized); err != nil {
			t.Fatal(err)
		}
		waitPaths(t, s, "A preferred again", func(ps []initiator.PathInfo) bool {
			return ps[a].Preferred && ps[a].ANA == nvme.ANAStateOptimized
		})
		load.WaitOps(20)
		da, db = trafficTo(load, e.ln, lnB, 100)
		if da == 0 || db > da/10 {
			t.Fatalf("after failback: %d bytes read through A, %d through B", da, db)
		}
		t.Logf("replays %d", s.Replays())
		load.Finish() // every acknowledged write reads back; no error was surfaced
		if c := s.Paths()[a].Connects; c != 1 {
			t.Errorf("path A connected %d times: ANA failover must not reconnect", c)
		}
	})
}
