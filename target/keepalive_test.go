package target

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// TestKeepAliveSurvivesSlowIOConnects: KATO 1 s, and after CC.EN the host
// connects four I/O queues 500 ms apart (2 s in all, as a transport that
// registers depth × MDTS per queue takes under emulation) before it sends
// any Keep Alive. The I/O-queue Connects are the controller's traffic, so
// it stays alive and every Connect succeeds; once the host then goes
// silent, the controller expires as usual.
func TestKeepAliveSurvivesSlowIOConnects(t *testing.T) {
	clk := newFakeClock()
	tg := newTestTarget(t, Options{clock: clk})
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Hosts: []string{testHostNQN},
		Namespaces: []NamespaceConfig{memNS(1, 64, 512)}}); err != nil {
		t.Fatal(err)
	}
	admin := newHost(t, tg, 32)
	cntlid := admin.connectAdmin(testSubNQN, testHostNQN, 1000)
	clk.Advance(900 * time.Millisecond) // property reads... then CC.EN
	admin.enable()
	admin.setFeature(nvme.FeatNumQueues, nvme.NumQueuesValue(4, 4), nvme.StatusSuccess)
	var ios []*host
	for qid := uint16(1); qid <= 4; qid++ {
		clk.Advance(500 * time.Millisecond)
		if admin.conn.isClosed() {
			t.Fatalf("controller expired before I/O queue %d connected", qid)
		}
		io := newHost(t, tg, 32)
		if r := io.connect(qid, 31, 0, testSubNQN, testHostNQN, cntlid); !r.Status().OK() {
			t.Fatalf("I/O queue %d connect: %v", qid, r.Status())
		}
		ios = append(ios, io)
	}
	// The host is live now and starts its keep-alive.
	var ka nvme.SQE
	ka.SetKeepAlive()
	admin.expect(ka, nil, nvme.StatusSuccess)
	ios[3].expect(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512), nvme.StatusSuccess)
	if admin.conn.isClosed() || tg.Stats().KeepAliveExpiries != 0 {
		t.Fatal("controller expired while the host was connecting")
	}
	// Silence: between KATO and 2 × KATO later the controller is gone.
	clk.Advance(2 * time.Second)
	admin.conn.waitClosed(t)
	for _, io := range ios {
		io.conn.waitClosed(t)
	}
	if tg.Stats().KeepAliveExpiries != 1 {
		t.Fatal("expiry not counted")
	}
}

// TestKeepAliveRestartsAtReady: the keep-alive timeout runs from CSTS.RDY
// (the controller's enable re-arms it), and a controller that is never
// enabled is still reaped (a host that died during setup).
func TestKeepAliveRestartsAtReady(t *testing.T) {
	clk := newFakeClock()
	tg := newTestTarget(t, Options{clock: clk})
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Hosts: []string{testHostNQN}}); err != nil {
		t.Fatal(err)
	}
	admin := newHost(t, tg, 32)
	admin.connectAdmin(testSubNQN, testHostNQN, 1000)
	clk.Advance(999 * time.Millisecond)
	admin.enable() // 1 ms before the first check
	clk.Advance(1500 * time.Millisecond)
	if admin.conn.isClosed() {
		t.Fatal("expired less than KATO after CSTS.RDY")
	}
	clk.Advance(1500 * time.Millisecond)
	admin.conn.waitClosed(t)

	dead := newHost(t, tg, 32)
	dead.connectAdmin(testSubNQN, testHostNQN, 1000)
	clk.Advance(2 * time.Second) // never enabled, silent
	dead.conn.waitClosed(t)
	if n := tg.Stats().KeepAliveExpiries; n != 2 {
		t.Fatalf("%d expiries, want 2", n)
	}
}
