package target

import (
	"errors"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/null"
	"github.com/rdmablk/rdmablk/nvme"
)

const testPortB = 2

// anaSetup is an ioSetup whose target has a second port (testPortB) and a
// controller with one I/O queue connected through it.
type anaSetup struct {
	*ioSetup
	adminB, ioB *host
}

// newHostOn is newHost on port.
func newHostOn(t testing.TB, tg *Target, port uint16, depth int) *host {
	t.Helper()
	conn := newFakeConn()
	q, err := tg.NewQueue(port, conn, depth)
	if err != nil {
		t.Fatal(err)
	}
	return &host{t: t, tg: tg, q: q, conn: conn}
}

func newANASetup(t testing.TB, ns ...NamespaceConfig) *anaSetup {
	t.Helper()
	s := newIOSetup(t, Options{}, ns...)
	if err := s.tg.AddPort(testPort(testPortB, "192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	a := &anaSetup{ioSetup: s, adminB: newHostOn(t, s.tg, testPortB, 32)}
	cntlid := a.adminB.connectAdmin(testSubNQN, testHostNQN, 0)
	a.adminB.enable()
	a.adminB.setFeature(nvme.FeatNumQueues, nvme.NumQueuesValue(1, 1), nvme.StatusSuccess)
	a.ioB = newHostOn(t, s.tg, testPortB, testDepth)
	if r := a.ioB.connect(1, testDepth-1, 0, testSubNQN, testHostNQN, cntlid); !r.Status().OK() {
		t.Fatalf("I/O connect on port B: %v", r.Status())
	}
	return a
}

// anaLog reads the whole ANA log (n bytes at off, LSP lsp).
func (h *host) anaLog(n uint32, off uint64, lsp uint8, rae bool, want nvme.Status) []byte {
	h.t.Helper()
	var s nvme.SQE
	s.SetGetLogPage(nvme.LogANA, nsidBroadcast, n, off)
	nvme.GetLogPageCmd{SQE: &s}.SetLSP(lsp)
	nvme.GetLogPageCmd{SQE: &s}.SetRAE(rae)
	b := make([]byte, n)
	for i := range b {
		b[i] = 0xEE
	}
	h.expect(s, b, want)
	return b
}

// anaGroupsOf reads and parses the ANA log.
func (h *host) anaGroupsOf(lsp uint8) (uint64, []nvme.ANAGroupDescriptor) {
	h.t.Helper()
	chg, groups, err := nvme.ParseANALog(h.anaLog(4096, 0, lsp, false, nvme.StatusSuccess))
	if err != nil {
		h.t.Fatal(err)
	}
	return chg, groups
}

func TestANAIdentify(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512), NamespaceConfig{NSID: 2, Backend: mem.New(64, 512), ANAGroup: 7})
	id, err := nvme.ParseIdentifyController(s.admin.identify(nvme.CNSController, 0, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if id.CMIC&nvme.CMICANA == 0 || id.OAES&nvme.OAESANAChange == 0 {
		t.Errorf("CMIC %#x OAES %#x: ANA not reported", id.CMIC, id.OAES)
	}
	wantCap := uint8(nvme.ANACAPOptimized | nvme.ANACAPNonOptimized | nvme.ANACAPInaccessible |
		nvme.ANACAPPersistentLoss | nvme.ANACAPChange)
	if id.ANACAP != wantCap || id.ANATT == 0 || id.ANAGRPMAX != MaxANAGroup || id.NANAGRPID != MaxANAGroup {
		t.Errorf("ANACAP %#x ANATT %d ANAGRPMAX %d NANAGRPID %d", id.ANACAP, id.ANATT, id.ANAGRPMAX, id.NANAGRPID)
	}
	for nsid, want := range map[uint32]uint32{1: DefaultANAGroup, 2: 7} {
		n, err := nvme.ParseIdentifyNamespace(s.admin.identify(nvme.CNSNamespace, nsid, nvme.StatusSuccess))
		if err != nil {
			t.Fatal(err)
		}
		if n.ANAGRPID != want {
			t.Errorf("nsid %d ANAGRPID %d, want %d", nsid, n.ANAGRPID, want)
		}
	}
	// AEC accepts the ANA change bit.
	s.admin.setFeature(nvme.FeatAsyncEventConfig, nvme.AECANAChange|nvme.AECNSAttr, nvme.StatusSuccess)
	if v := s.admin.getFeature(nvme.FeatAsyncEventConfig, nvme.StatusSuccess); v != nvme.AECANAChange|nvme.AECNSAttr {
		t.Errorf("AEC %#x", v)
	}
	// Discovery controllers report no ANA.
	h := newHost(t, s.tg, 32)
	h.connectAdmin(nvme.DiscoveryNQN, testHostNQN, 0)
	h.enable()
	did, err := nvme.ParseIdentifyController(h.identify(nvme.CNSController, 0, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if did.CMIC&nvme.CMICANA != 0 || did.ANAGRPMAX != 0 {
		t.Errorf("discovery controller reports ANA: CMIC %#x ANAGRPMAX %d", did.CMIC, did.ANAGRPMAX)
	}
}

func TestANANamespaceGroupRange(t *testing.T) {
	s := newIOSetup(t, Options{})
	err := s.sub.AddNamespace(NamespaceConfig{NSID: 1, Backend: mem.New(8, 512), ANAGroup: MaxANAGroup + 1})
	if !errors.Is(err, ErrBadANA) {
		t.Fatalf("AddNamespace with group %d: %v", MaxANAGroup+1, err)
	}
	if err := s.sub.AddNamespace(NamespaceConfig{NSID: 1, Backend: mem.New(8, 512), ANAGroup: MaxANAGroup}); err != nil {
		t.Fatal(err)
	}
}

func TestANALog(t *testing.T) {
	s := newANASetup(t, memNS(3, 64, 512), memNS(1, 64, 512),
		NamespaceConfig{NSID: 2, Backend: mem.New(64, 512), ANAGroup: 5})
	chg, groups := s.admin.anaGroupsOf(0)
	if chg != 0 || len(groups) != 2 {
		t.Fatalf("chgcnt %d groups %+v", chg, groups)
	}
	g1, g5 := groups[0], groups[1]
	if g1.GroupID != 1 || g1.State != nvme.ANAStateOptimized || len(g1.NSIDs) != 2 || g1.NSIDs[0] != 1 || g1.NSIDs[1] != 3 {
		t.Errorf("group 1: %+v", g1)
	}
	if g5.GroupID != 5 || g5.State != nvme.ANAStateOptimized || len(g5.NSIDs) != 1 || g5.NSIDs[0] != 2 {
		t.Errorf("group 5: %+v", g5)
	}

	// A state on port B shows only in port B's log; port A's is unchanged
	// apart from the subsystem-wide change count.
	if err := s.sub.SetANAState(testPortB, 5, nvme.ANAStateNonOptimized); err != nil {
		t.Fatal(err)
	}
	chg, groups = s.adminB.anaGroupsOf(0)
	if chg != 1 || groups[1].State != nvme.ANAStateNonOptimized || groups[1].ChangeCount != 1 || groups[0].State != nvme.ANAStateOptimized {
		t.Errorf("port B log: chgcnt %d %+v", chg, groups)
	}
	if _, groups = s.admin.anaGroupsOf(0); groups[1].State != nvme.ANAStateOptimized {
		t.Errorf("port A log: %+v", groups)
	}
	if st := s.sub.ANAState(testPortB, 5); st != nvme.ANAStateNonOptimized {
		t.Errorf("ANAState accessor %d", st)
	}
	// Setting the same state again changes nothing.
	if err := s.sub.SetANAState(testPortB, 5, nvme.ANAStateNonOptimized); err != nil {
		t.Fatal(err)
	}
	if c := s.sub.ANAChangeCount(); c != 1 {
		t.Errorf("change count %d after a no-op", c)
	}

	// Return Groups Only: no NSID lists.
	_, groups = s.adminB.anaGroupsOf(nvme.ANALSPRGO)
	if len(groups) != 2 || len(groups[0].NSIDs) != 0 || len(groups[1].NSIDs) != 0 {
		t.Errorf("RGO groups %+v", groups)
	}
	full := s.adminB.anaLog(4096, 0, 0, false, nvme.StatusSuccess)
	size := nvme.ANALogHeaderSize + 2*nvme.ANAGroupDescSize + 3*4
	for i := size; i < len(full); i++ {
		if full[i] != 0 {
			t.Fatalf("byte %d past the log is %#x", i, full[i])
		}
	}
	// Offsets: a window into the log; beyond it is Invalid Field.
	part := s.adminB.anaLog(16, nvme.ANALogHeaderSize, 0, false, nvme.StatusSuccess)
	if string(part) != string(full[nvme.ANALogHeaderSize:nvme.ANALogHeaderSize+16]) {
		t.Errorf("window at 16: %x, want %x", part, full[16:32])
	}
	s.adminB.anaLog(16, uint64(size), 0, false, nvme.StatusInvalidField.WithDNR())

	// A group without namespaces in the subsystem is not listed (the
	// default group always is).
	if err := s.sub.RemoveNamespace(2); err != nil {
		t.Fatal(err)
	}
	if _, groups = s.admin.anaGroupsOf(0); len(groups) != 1 || groups[0].GroupID != 1 {
		t.Errorf("after removal: %+v", groups)
	}
}

func TestANASetStateErrors(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	for _, tc := range []struct {
		port  uint16
		group uint32
		state uint8
		want  error
	}{
		{testPortID, 0, nvme.ANAStateInaccessible, ErrBadANA},
		{testPortID, MaxANAGroup + 1, nvme.ANAStateInaccessible, ErrBadANA},
		{testPortID, 1, 0, ErrBadANA},
		{testPortID, 1, 5, ErrBadANA},
		{99, 1, nvme.ANAStateInaccessible, ErrNoPort},
	} {
		if err := s.sub.SetANAState(tc.port, tc.group, tc.state); !errors.Is(err, tc.want) {
			t.Errorf("SetANAState(%d, %d, %d) = %v, want %v", tc.port, tc.group, tc.state, err, tc.want)
		}
		if err := s.tg.SetANAState(tc.port, tc.group, tc.state); !errors.Is(err, tc.want) {
			t.Errorf("Target.SetANAState(%d, %d, %d) = %v, want %v", tc.port, tc.group, tc.state, err, tc.want)
		}
	}
	if s.sub.ANAChangeCount() != 0 {
		t.Error("a rejected call changed the state")
	}
	if err := s.tg.disc.SetANAState(testPortID, 1, nvme.ANAStateOptimized); !errors.Is(err, ErrBadConfig) {
		t.Errorf("discovery subsystem: %v", err)
	}
}

// TestANAIOStatus: I/O through a port where the group is inaccessible,
// in persistent loss or in transition fails with the ANA status and never
// reaches the backend; the other port and the other group are unaffected.
func TestANAIOStatus(t *testing.T) {
	be := &countingBackend{Backend: mem.New(64, 512)}
	s := newANASetup(t, NamespaceConfig{NSID: 1, Backend: inlineBackend{be}}, NamespaceConfig{NSID: 2, Backend: mem.New(64, 512), ANAGroup: 2})
	buf := make([]byte, 512)
	s.io.expect(rw(nvme.IOWrite, 1, 0, 1, 0), []byte{1: 0xAB, 511: 0}, nvme.StatusSuccess)
	for _, tc := range []struct {
		state uint8
		want  nvme.Status
	}{
		{nvme.ANAStateNonOptimized, nvme.StatusSuccess},
		{nvme.ANAStateInaccessible, nvme.StatusANAInaccessible},
		{nvme.ANAStatePersistentLoss, nvme.StatusANAPersistentLoss},
		{nvme.ANAStateChange, nvme.StatusANATransition},
		{nvme.ANAStateOptimized, nvme.StatusSuccess},
	} {
		if err := s.tg.SetANAState(testPortID, DefaultANAGroup, tc.state); err != nil {
			t.Fatal(err)
		}
		flushes := be.flushes.Load()
		s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), buf, tc.want)
		s.io.expect(rw(nvme.IOWrite, 1, 1, 1, 0), buf, tc.want)
		var fl nvme.SQE
		fl.SetRW(nvme.IOFlush, 1, 0, 0, 0)
		s.io.expect(fl, nil, tc.want)
		fl.SetRW(nvme.IOFlush, nsidBroadcast, 0, 0, 0)
		s.io.expect(fl, nil, tc.want)
		if tc.want != nvme.StatusSuccess && be.flushes.Load() != flushes {
			t.Errorf("state %d: the backend was flushed", tc.state)
		}
		// Group 2 and port B are unaffected.
		s.io.expect(rw(nvme.IORead, 2, 0, 1, 0), buf, nvme.StatusSuccess)
		s.ioB.expect(rw(nvme.IORead, 1, 0, 1, 0), buf, nvme.StatusSuccess)
		if buf[1] != 0xAB {
			t.Fatalf("read through port B returned %#x", buf[1])
		}
	}
}

// TestANAChangeEvent: the ANA Change notice goes to controllers on the
// changed port that enabled it, once until they read the log without RAE.
func TestANAChangeEvent(t *testing.T) {
	s := newANASetup(t, memNS(1, 64, 512))
	a, b := s.admin, s.adminB
	a.setFeature(nvme.FeatAsyncEventConfig, nvme.AECANAChange, nvme.StatusSuccess)
	b.setFeature(nvme.FeatAsyncEventConfig, nvme.AECANAChange, nvme.StatusSuccess)
	ra, done := a.aer()
	if done {
		t.Fatal("AER completed at once")
	}
	rb, done := b.aer()
	if done {
		t.Fatal("AER completed at once")
	}
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateInaccessible); err != nil {
		t.Fatal(err)
	}
	b.wait(rb)
	typ, info, lid := nvme.ParseAsyncEventResult(rb.CQE.DW0())
	if !rb.Status().OK() || typ != nvme.AsyncEventTypeNotice || info != nvme.AsyncEventNoticeANAChange || lid != nvme.LogANA {
		t.Fatalf("AER %v type %d info %#x lid %#x", rb.Status(), typ, info, lid)
	}
	a.noCompletion() // port A did not change

	// Masked until the log is read without RAE.
	rb2, done := b.aer()
	if done {
		t.Fatal("AER completed at once")
	}
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateChange); err != nil {
		t.Fatal(err)
	}
	b.noCompletion()
	b.anaLog(4096, 0, 0, true, nvme.StatusSuccess) // RAE: still masked
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateNonOptimized); err != nil {
		t.Fatal(err)
	}
	b.noCompletion()
	if _, groups := b.anaGroupsOf(0); groups[0].State != nvme.ANAStateNonOptimized {
		t.Fatalf("state %d", groups[0].State)
	}
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateOptimized); err != nil {
		t.Fatal(err)
	}
	b.wait(rb2)
	if _, info, _ := nvme.ParseAsyncEventResult(rb2.CQE.DW0()); info != nvme.AsyncEventNoticeANAChange {
		t.Fatalf("second AER info %#x", info)
	}

	// Port A's controller is told about port A.
	if err := s.tg.SetANAState(testPortID, 1, nvme.ANAStateNonOptimized); err != nil {
		t.Fatal(err)
	}
	a.wait(ra)
	if _, info, _ := nvme.ParseAsyncEventResult(ra.CQE.DW0()); info != nvme.AsyncEventNoticeANAChange {
		t.Fatalf("port A AER info %#x", info)
	}
}

// TestANAIOAllocs: the ANA check allocates nothing, with and without a
// blocking state in the subsystem.
func TestANAIOAllocs(t *testing.T) {
	s := newANASetup(t, memNS(1, 64, 512))
	r := &Request{Length: 512, Data: make([]byte, 512), Dir: nvme.DirCtrlToHost}
	r.SQE.SetRW(nvme.IORead, 1, 0, 1, 0)
	run := func() {
		if !s.io.q.Execute(r) || !r.Status().OK() {
			t.Fatalf("read: %v", r.Status())
		}
	}
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocs per read (all optimized)", n)
	}
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateInaccessible); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocs per read (another port blocked)", n)
	}
}

// BenchmarkExecuteRead4KNullANABlocked: the inline read path when the
// subsystem has a blocking ANA state on another port (the map lookup).
func BenchmarkExecuteRead4KNullANABlocked(b *testing.B) {
	s := newANASetup(b, NamespaceConfig{NSID: 1, Backend: null.New(1<<20, 4096)})
	if err := s.sub.SetANAState(testPortB, 1, nvme.ANAStateInaccessible); err != nil {
		b.Fatal(err)
	}
	r := &Request{Length: 4096, Data: make([]byte, 4096), Dir: nvme.DirCtrlToHost}
	r.SQE.SetRW(nvme.IORead, 1, 0, 1, 0)
	q := s.io.q
	b.ReportAllocs()
	b.SetBytes(4096)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.SQE.SetCID(uint16(i))
		binaryPutSLBA(&r.SQE, uint64(i)&0xFFFFF)
		if !q.Execute(r) || !r.Status().OK() {
			b.Fatal(r.Status())
		}
	}
}
