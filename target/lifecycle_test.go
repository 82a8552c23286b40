package target

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/null"
	"github.com/rdmablk/rdmablk/nvme"
)

func TestKeepAliveExpiry(t *testing.T) {
	s := newIOSetup(t, Options{MinKATO: 20 * time.Millisecond, MaxKATO: 20 * time.Millisecond}, memNS(1, 64, 512))
	// The setup connected with KATO 0 (disabled); arm 20 ms and go idle.
	s.admin.setFeature(nvme.FeatKeepAliveTimer, 20, nvme.StatusSuccess)
	if _, done := s.admin.aer(); done {
		t.Fatal("AER completed")
	}
	s.admin.conn.waitClosed(t)
	s.io.conn.waitClosed(t)
	// The held AER is dropped with the controller.
	select {
	case r := <-s.admin.conn.completed:
		if r.Status() != nvme.StatusInternalPathError {
			t.Fatalf("AER after expiry: %v", r.Status())
		}
	case <-time.After(safety):
		t.Fatal("held AER not completed after expiry")
	}
	if st := s.tg.Stats(); st.KeepAliveExpiries != 1 || st.Controllers != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Commands on the dead controller fail; the CNTLID is gone.
	s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512), nvme.StatusInternalPathError)
	if csts := s.admin.propGet(nvme.PropCSTS, false); csts&nvme.CSTSCFS == 0 {
		t.Fatalf("CSTS %#x after expiry, want CFS", csts)
	}
	io := newHost(t, s.tg, 32)
	if r := io.connect(2, 31, 0, testSubNQN, testHostNQN, s.cntlid); r.Status() != nvme.StatusConnectInvalidParam.WithDNR() {
		t.Fatalf("connect to expired controller: %v", r.Status())
	}
	s.io.q.Destroy()
	s.admin.q.Destroy()
	if st := s.tg.Stats(); st.Queues != 1 {
		t.Fatalf("queues %d after Destroy", st.Queues)
	}
}

// TestKeepAliveTraffic drives the keep-alive check by hand (the timer is an
// hour): traffic since the last check keeps the controller, none kills it.
func TestKeepAliveTraffic(t *testing.T) {
	s := newIOSetup(t, Options{MinKATO: time.Hour, MaxKATO: time.Hour}, memNS(1, 64, 512))
	c := s.admin.q.Controller()
	s.admin.setFeature(nvme.FeatKeepAliveTimer, 1000, nvme.StatusSuccess)
	c.katoCheck() // Set Features counted as traffic
	var ka nvme.SQE
	ka.SetKeepAlive()
	s.admin.expect(ka, nil, nvme.StatusSuccess)
	c.katoCheck()
	s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512), nvme.StatusSuccess) // I/O counts too
	c.katoCheck()
	if s.admin.conn.isClosed() || s.tg.Stats().KeepAliveExpiries != 0 {
		t.Fatal("controller expired despite traffic")
	}
	c.katoCheck() // no traffic since the last check
	s.admin.conn.waitClosed(t)
	s.io.conn.waitClosed(t)
	if s.tg.Stats().KeepAliveExpiries != 1 {
		t.Fatal("expiry not counted")
	}
}

func TestShutdownFlushes(t *testing.T) {
	for _, inline := range []bool{true, false} {
		cb := &countingBackend{Backend: mem.New(64, 512)}
		var be blockdev.Backend = cb
		if inline {
			be = inlineBackend{cb}
		}
		cb2 := &countingBackend{Backend: null.New(64, 512)}
		s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: be}, NamespaceConfig{NSID: 2, Backend: cb2})
		s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), nvme.StatusSuccess)
		r := s.admin.propSet(nvme.PropCC, ccEnable|nvme.CCSHNNormal)
		if !r.Status().OK() {
			t.Fatalf("inline=%v: shutdown: %v", inline, r.Status())
		}
		if cb.flushes.Load() != 1 || cb2.flushes.Load() != 1 {
			t.Fatalf("inline=%v: flushes %d and %d, want 1 each", inline, cb.flushes.Load(), cb2.flushes.Load())
		}
		if csts := s.admin.propGet(nvme.PropCSTS, false); csts&nvme.CSTSSHSTMask != nvme.CSTSSHSTComplete || csts&nvme.CSTSRDY != 0 {
			t.Fatalf("inline=%v: CSTS %#x, want SHST complete", inline, csts)
		}
		// No I/O after shutdown.
		s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), nvme.StatusCommandSequenceError)
		// Clearing SHN and EN resets; enabling again works.
		s.admin.propSet(nvme.PropCC, 0)
		if csts := s.admin.propGet(nvme.PropCSTS, false); csts != 0 {
			t.Fatalf("CSTS %#x after reset", csts)
		}
		s.admin.enable()
		s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512), nvme.StatusSuccess)
	}
}

// failFlush fails Flush.
type failFlush struct{ blockdev.Backend }

func (failFlush) Flush() error { return blockdev.ErrMedium }

func TestShutdownFlushFailureSetsCFS(t *testing.T) {
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: failFlush{mem.New(8, 512)}})
	s.admin.propSet(nvme.PropCC, ccEnable|nvme.CCSHNAbrupt)
	if csts := s.admin.propGet(nvme.PropCSTS, false); csts&nvme.CSTSCFS == 0 || csts&nvme.CSTSSHSTMask != nvme.CSTSSHSTComplete {
		t.Fatalf("CSTS %#x, want CFS and SHST complete", csts)
	}
}

// heldBackend returns a worker-path backend whose reads wait for release.
func heldBackend() *countingBackend {
	return &countingBackend{Backend: mem.New(64, 512), hold: make(chan struct{}), entered: make(chan struct{}, 16)}
}

func waitEntered(t *testing.T, b *countingBackend) {
	t.Helper()
	select {
	case <-b.entered:
	case <-time.After(safety):
		t.Fatal("backend never entered")
	}
}

func TestDestroyWithInflightIO(t *testing.T) {
	hb := heldBackend()
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: hb})
	r, done := s.io.submit(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512))
	if done {
		t.Fatalf("blocking read completed inline: %v", r.Status())
	}
	waitEntered(t, hb)
	s.io.q.Destroy()
	s.io.q.Destroy() // idempotent
	s.admin.q.Destroy()
	close(hb.hold)
	s.io.wait(r)
	if !r.Status().OK() || r.CQE.SQID() != 1 {
		t.Fatalf("in-flight read after Destroy: %v SQID %d", r.Status(), r.CQE.SQID())
	}
	// Execute after Destroy is answered without touching anything.
	r2 := s.io.do(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512))
	if r2.Status() != nvme.StatusAbortSQDeleted {
		t.Fatalf("Execute after Destroy: %v", r2.Status())
	}
}

func TestRemoveNamespaceWaitsForIO(t *testing.T) {
	hb := heldBackend()
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: hb})
	r, done := s.io.submit(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512))
	if done {
		t.Fatal("completed inline")
	}
	waitEntered(t, hb)
	removed := make(chan error, 1)
	go func() { removed <- s.sub.RemoveNamespace(1) }()
	// New I/O to the namespace fails while the removal waits. (Loop until
	// the removal has published the new table.)
	for {
		r2 := s.io.do(rw(nvme.IOWrite, 1, 0, 1, 0), make([]byte, 512))
		if r2.Status() == nvme.StatusInvalidNamespace.WithDNR() {
			break
		}
		if !r2.Status().OK() {
			t.Fatalf("write during removal: %v", r2.Status())
		}
		select {
		case err := <-removed:
			t.Fatalf("RemoveNamespace returned (%v) with a read in flight", err)
		default:
		}
	}
	select {
	case err := <-removed:
		t.Fatalf("RemoveNamespace returned (%v) with a read in flight", err)
	default:
	}
	close(hb.hold)
	select {
	case err := <-removed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(safety):
		t.Fatal("RemoveNamespace never returned")
	}
	if !hb.readDone.Load() {
		t.Fatal("RemoveNamespace returned before the backend call finished")
	}
	s.io.wait(r)
	if !r.Status().OK() {
		t.Fatal(r.Status())
	}
}

func TestTargetClose(t *testing.T) {
	hb := heldBackend()
	s := newIOSetup(t, Options{}, NamespaceConfig{NSID: 1, Backend: hb}, memNS(2, 8, 512))
	r, done := s.io.submit(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512))
	if done {
		t.Fatal("completed inline")
	}
	waitEntered(t, hb)
	if _, done := s.admin.aer(); done {
		t.Fatal("AER completed")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.tg.Close() }()
	s.admin.conn.waitClosed(t)
	s.io.conn.waitClosed(t)
	select {
	case <-closed:
		t.Fatal("Close returned with a read in flight")
	default:
	}
	close(hb.hold)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(safety):
		t.Fatal("Close never returned")
	}
	if !hb.readDone.Load() {
		t.Fatal("Close returned before the backend call finished")
	}
	s.io.wait(r)
	// A command already executing finishes normally: a graceful shutdown
	// does not turn in-flight I/O into errors.
	if r.Status() != nvme.StatusSuccess {
		t.Fatalf("in-flight read across Close: %v", r.Status())
	}
	// The AER was completed by the teardown.
	select {
	case ar := <-s.admin.conn.completed:
		if ar.Status() != nvme.StatusInternalPathError {
			t.Fatalf("AER: %v", ar.Status())
		}
	case <-time.After(safety):
		t.Fatal("AER not completed")
	}
	// Afterwards nothing touches a backend and nothing new starts; what
	// the target refuses gets a path-related status without DNR, which a
	// multipath host fails over instead of reporting an I/O error.
	refused := s.io.expect(rw(nvme.IORead, 2, 0, 1, 0), make([]byte, 512), nvme.StatusInternalPathError).Status()
	if refused.SCT() != 3 || refused.DNR() {
		t.Fatalf("refused I/O: %v (want SCT 3h, no DNR)", refused)
	}
	if _, err := s.tg.NewQueue(testPortID, newFakeConn(), 32); !errors.Is(err, ErrClosed) {
		t.Fatalf("NewQueue after Close: %v", err)
	}
	if _, err := s.tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN2}); !errors.Is(err, ErrClosed) {
		t.Fatalf("AddSubsystem after Close: %v", err)
	}
	if err := s.sub.AddNamespace(memNS(3, 8, 512)); err == nil {
		t.Fatal("AddNamespace after Close succeeded")
	}
	if err := s.tg.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestControlPathErrors(t *testing.T) {
	tg := newTestTarget(t, Options{})
	check := func(name string, err, want error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	check("duplicate port", tg.AddPort(testPort(testPortID, "192.0.2.9")), ErrPortExists)
	bad := testPort(9, "x")
	bad.Caps.MaxDataTransfer = 4096
	check("small MDTS", tg.AddPort(bad), ErrBadPort)
	bad = testPort(9, "x")
	bad.Caps.InCapsuleDataSize = 100
	check("odd ICD", tg.AddPort(bad), ErrBadPort)
	check("remove unknown port", tg.RemovePort(77), ErrNoPort)
	_, err := tg.NewQueue(77, newFakeConn(), 32)
	check("queue on unknown port", err, ErrNoPort)
	_, err = tg.NewQueue(testPortID, newFakeConn(), 1)
	check("queue depth 1", err, ErrBadDepth)

	_, err = tg.AddSubsystem(SubsystemConfig{NQN: "not-an-nqn"})
	check("bad NQN", err, ErrBadNQN)
	_, err = tg.AddSubsystem(SubsystemConfig{NQN: nvme.DiscoveryNQN})
	check("discovery NQN", err, ErrBadNQN)
	_, err = tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Serial: "012345678901234567890"})
	check("long serial", err, ErrBadConfig)
	_, err = tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Hosts: []string{"bad host"}})
	check("bad host", err, ErrBadNQN)
	_, err = tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Namespaces: []NamespaceConfig{memNS(1, 8, 512), memNS(1, 8, 512)}})
	check("duplicate nsid in config", err, ErrNamespaceExists)
	sub, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Serial() == "" || sub.Model() != "rdmablk" {
		t.Errorf("defaults: serial %q model %q", sub.Serial(), sub.Model())
	}
	_, err = tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN})
	check("duplicate subsystem", err, ErrSubsystemExists)
	check("remove unknown subsystem", tg.RemoveSubsystem(testSubNQN2), ErrNoSubsystem)

	check("nsid 0", sub.AddNamespace(memNS(0, 8, 512)), ErrBadNSID)
	check("nsid too big", sub.AddNamespace(memNS(MaxNSID+1, 8, 512)), ErrBadNSID)
	check("nil backend", sub.AddNamespace(NamespaceConfig{NSID: 1}), ErrBadBackend)
	check("empty backend", sub.AddNamespace(memNS(1, 0, 512)), ErrBadBackend)
	if err := sub.AddNamespace(memNS(1, 8, 512)); err != nil {
		t.Fatal(err)
	}
	check("duplicate nsid", sub.AddNamespace(memNS(1, 8, 512)), ErrNamespaceExists)
	check("remove unknown nsid", sub.RemoveNamespace(2), ErrNoNamespace)

	check("bad host NQN", sub.AddHost("x"), ErrBadNQN)
	if err := sub.AddHost(testHostNQN); err != nil {
		t.Fatal(err)
	}
	check("duplicate host", sub.AddHost(testHostNQN), ErrHostExists)
	check("remove unknown host", sub.RemoveHost(otherHost), ErrNoHost)
	sub.SetAllowAnyHost(true)
	if !sub.AllowAnyHost() || len(sub.Hosts()) != 1 {
		t.Errorf("hosts %v any %v", sub.Hosts(), sub.AllowAnyHost())
	}
	if ss := tg.Subsystems(); len(ss) != 1 || ss[0].NQN() != testSubNQN {
		t.Errorf("subsystems %v", ss)
	}
	if ps := tg.Ports(); len(ps) != 1 || ps[0].ID != testPortID {
		t.Errorf("ports %v", ps)
	}
}

func TestGateProtocol(t *testing.T) {
	var g gate
	g.init()
	if !g.enter() {
		t.Fatal("enter on open gate")
	}
	done := g.close()
	select {
	case <-done:
		t.Fatal("drained with a user inside")
	default:
	}
	if g.enter() {
		t.Fatal("enter after close")
	}
	g.leave()
	select {
	case <-done:
	default:
		t.Fatal("not drained after the last leave")
	}
	if g.close() != done {
		t.Fatal("close not idempotent")
	}
}

func TestReqStateString(t *testing.T) {
	for s := stateIdle; s <= stateCompleted; s++ {
		if s.String() == "invalid" {
			t.Errorf("state %d has no name", s)
		}
	}
	if reqState(99).String() != "invalid" {
		t.Error("out of range state")
	}
}
