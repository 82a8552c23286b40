package target

import (
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// aer submits an Asynchronous Event Request and reports whether it
// completed at once.
func (h *host) aer() (*Request, bool) {
	var s nvme.SQE
	s.SetAsyncEventRequest()
	return h.submit(s, nil)
}

// noCompletion checks that no asynchronous completion is pending.
func (h *host) noCompletion() {
	h.t.Helper()
	select {
	case r := <-h.conn.completed:
		h.t.Fatalf("unexpected completion of CID %d", r.CQE.CID())
	default:
	}
}

func TestNamespaceChangedAEN(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	a := s.admin
	a.setFeature(nvme.FeatAsyncEventConfig, nvme.AECNSAttr, nvme.StatusSuccess)

	r1, done := a.aer()
	if done {
		t.Fatalf("AER completed at once: %v", r1.Status())
	}
	if err := s.sub.AddNamespace(memNS(3, 64, 512)); err != nil {
		t.Fatal(err)
	}
	a.wait(r1)
	typ, info, lid := nvme.ParseAsyncEventResult(r1.CQE.DW0())
	if !r1.Status().OK() || typ != nvme.AsyncEventTypeNotice || info != nvme.AsyncEventNoticeNSChanged || lid != nvme.LogChangedNSList {
		t.Fatalf("AER result %v type %d info %#x lid %#x", r1.Status(), typ, info, lid)
	}
	// Another change before the log is read: recorded but not reported.
	if err := s.sub.AddNamespace(memNS(4, 64, 512)); err != nil {
		t.Fatal(err)
	}
	r2, done := a.aer()
	if done {
		t.Fatal("masked event reported")
	}
	a.noCompletion()
	// RAE keeps the event masked and the list.
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, true, nvme.StatusSuccess)); len(l) != 2 || l[0] != 3 || l[1] != 4 {
		t.Fatalf("changed NS list with RAE %v", l)
	}
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 2 {
		t.Fatalf("changed NS list %v", l)
	}
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 0 {
		t.Fatalf("changed NS list not cleared: %v", l)
	}
	// Re-armed: removal is reported on the held AER.
	if err := s.sub.RemoveNamespace(4); err != nil {
		t.Fatal(err)
	}
	a.wait(r2)
	if _, info, _ := nvme.ParseAsyncEventResult(r2.CQE.DW0()); info != nvme.AsyncEventNoticeNSChanged {
		t.Fatalf("second AER info %#x", info)
	}
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 1 || l[0] != 4 {
		t.Fatalf("changed NS list after removal %v", l)
	}
	// The removed namespace is gone from the active list and I/O.
	if l := nvme.ParseNSList(a.identify(nvme.CNSActiveNSList, 0, nvme.StatusSuccess)); len(l) != 2 || l[1] != 3 {
		t.Fatalf("active list %v", l)
	}
	s.io.expect(rw(nvme.IORead, 4, 0, 1, 0), make([]byte, 512), nvme.StatusInvalidNamespace.WithDNR())
	s.io.expect(rw(nvme.IORead, 3, 0, 1, 0), make([]byte, 512), nvme.StatusSuccess)

	// An event raised with no AER outstanding is queued for the next.
	s.sub.NotifyNamespaceChanged(3)
	r3, done := a.aer()
	if !done || !r3.Status().OK() {
		t.Fatalf("queued event not delivered at once: done %v %v", done, r3.Status())
	}
	// Limit: AERL+1 = 4 outstanding.
	for i := range 4 {
		if _, done := a.aer(); done {
			t.Fatalf("AER %d completed", i)
		}
	}
	if r, done := a.aer(); !done || r.Status() != nvme.StatusAsyncLimit.WithDNR() {
		t.Fatalf("fifth AER: done %v %v", done, r.Status())
	}
	// Destroying the admin queue completes the held AERs (aborted).
	a.q.Destroy()
	for range 4 {
		select {
		case r := <-a.conn.completed:
			if r.Status() != nvme.StatusAbortSQDeleted {
				t.Fatalf("held AER on teardown: %v", r.Status())
			}
		case <-a.conn.closed:
			t.Fatal("admin conn closed by its own Destroy")
		}
	}
	s.io.conn.waitClosed(t) // the controller's I/O queue is closed
}

func TestAECDisabledNoEvent(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	a := s.admin
	if _, done := a.aer(); done {
		t.Fatal("AER completed")
	}
	if err := s.sub.AddNamespace(memNS(2, 64, 512)); err != nil {
		t.Fatal(err)
	}
	a.noCompletion()
	if l := nvme.ParseNSList(a.getLog(nvme.LogChangedNSList, 4096, 0, false, nvme.StatusSuccess)); len(l) != 1 || l[0] != 2 {
		t.Fatalf("changed NS list %v", l)
	}
}

func TestDiscovery(t *testing.T) {
	tg := newTestTarget(t, Options{})
	if err := tg.AddPort(testPort(2, "198.51.100.7")); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, Hosts: []string{testHostNQN}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN2, Hosts: []string{otherHost},
		Namespaces: []NamespaceConfig{memNS(1, 8, 512)}}); err != nil {
		t.Fatal(err)
	}
	d := newHost(t, tg, 32)
	cntlid := d.connectAdmin(nvme.DiscoveryNQN, testHostNQN, 0)
	d.enable()
	if v := d.getFeature(nvme.FeatKeepAliveTimer, nvme.StatusSuccess); v != uint32(DiscoveryKATO.Milliseconds()) {
		t.Errorf("discovery KATO %d ms", v)
	}
	id, err := nvme.ParseIdentifyController(d.identify(nvme.CNSController, 0, nvme.StatusSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if id.CNTRLTYPE != nvme.CntrlTypeDiscovery || id.OAES != nvme.OAESDiscoveryChange || id.SubNQN != nvme.DiscoveryNQN ||
		id.CNTLID != cntlid || id.NN != 0 {
		t.Errorf("discovery identify %+v", id)
	}
	d.identify(nvme.CNSActiveNSList, 0, nvme.StatusInvalidField.WithDNR())
	d.getLog(nvme.LogSMART, 512, 0, false, nvme.StatusInvalidLogPage.WithDNR())
	d.setFeature(nvme.FeatNumQueues, 0, nvme.StatusInvalidField.WithDNR())

	// The host first reads the header, then the whole log.
	hdr, es, err := nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, 1024, 0, false, nvme.StatusSuccess))
	if err != nil || hdr.NumRec != 2 || len(es) != 0 || hdr.RecFmt != 0 {
		t.Fatalf("header %+v entries %d err %v", hdr, len(es), err)
	}
	hdr2, es, err := nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(2)), 0, false, nvme.StatusSuccess))
	if err != nil || hdr2.GenCtr != hdr.GenCtr || len(es) != 2 {
		t.Fatalf("log %+v %d entries, err %v", hdr2, len(es), err)
	}
	addrs := map[string]uint16{"192.0.2.1": 1, "198.51.100.7": 2}
	for _, e := range es {
		if e.SubNQN != testSubNQN || e.TrType != nvme.TrTypeRDMA || e.AdrFam != nvme.AdrFamIPv4 ||
			e.SubType != nvme.SubTypeNVM || e.CNTLID != 0xFFFF || e.ASQSZ != 32 || e.TrSvcID != "4420" ||
			addrs[e.TrAddr] != e.PortID || e.TSAS[1] != nvme.RDMAPrTypeRoCEv2 {
			t.Errorf("entry %+v", e)
		}
	}
	// A window at an offset: the second entry alone.
	part := d.getLog(nvme.LogDiscovery, 1024, 2048, false, nvme.StatusSuccess)
	e1, err := nvme.ParseDiscoveryLogEntry(part)
	if err != nil || e1 != es[1] {
		t.Errorf("entry at offset 2048: %+v %v", e1, err)
	}
	// Reading past the end zero-fills; starting past it is invalid.
	tail := d.getLog(nvme.LogDiscovery, 2048, 2048, false, nvme.StatusSuccess)
	for _, b := range tail[1024:] {
		if b != 0 {
			t.Fatal("bytes past the log not zero")
		}
	}
	d.getLog(nvme.LogDiscovery, 1024, 3072, false, nvme.StatusInvalidField.WithDNR())

	// Discovery change: enable, hold an AER, change the subsystem's hosts.
	d.setFeature(nvme.FeatAsyncEventConfig, nvme.AECDiscoveryChange, nvme.StatusSuccess)
	r, done := d.aer()
	if done {
		t.Fatal("discovery AER completed at once")
	}
	s2, _ := tg.Subsystem(testSubNQN2)
	if err := s2.AddHost(testHostNQN); err != nil {
		t.Fatal(err)
	}
	d.wait(r)
	if typ, info, lid := nvme.ParseAsyncEventResult(r.CQE.DW0()); typ != nvme.AsyncEventTypeNotice ||
		info != nvme.AsyncEventNoticeDiscoveryChange || lid != nvme.LogDiscovery {
		t.Fatalf("discovery AER %#x", r.CQE.DW0())
	}
	hdr3, es, err := nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(4)), 0, false, nvme.StatusSuccess))
	if err != nil || hdr3.GenCtr == hdr.GenCtr || len(es) != 4 {
		t.Fatalf("after AddHost: genctr %d→%d, %d entries, %v", hdr.GenCtr, hdr3.GenCtr, len(es), err)
	}
	// Re-armed after the read: a port removal is reported again.
	r, done = d.aer()
	if done {
		t.Fatal("AER completed at once")
	}
	if err := tg.RemovePort(2); err != nil {
		t.Fatal(err)
	}
	d.wait(r)
	_, es, _ = nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(4)), 0, false, nvme.StatusSuccess))
	if len(es) != 2 {
		t.Fatalf("%d entries after RemovePort", len(es))
	}

	// No I/O queues on a discovery controller.
	io := newHost(t, tg, 32)
	if r := io.connect(1, 31, 0, nvme.DiscoveryNQN, testHostNQN, cntlid); r.Status() != nvme.StatusConnectInvalidParam.WithDNR() {
		t.Errorf("I/O connect to discovery: %v", r.Status())
	}
	if st := tg.Stats(); st.Controllers != 1 || st.Subsystems != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestRemoveSubsystem checks controllers are torn down and in-flight I/O is
// waited for.
func TestRemoveSubsystem(t *testing.T) {
	s := newIOSetup(t, Options{}, memNS(1, 64, 512))
	if err := s.tg.RemoveSubsystem(testSubNQN); err != nil {
		t.Fatal(err)
	}
	s.admin.conn.waitClosed(t)
	s.io.conn.waitClosed(t)
	if _, ok := s.tg.Subsystem(testSubNQN); ok {
		t.Fatal("subsystem still listed")
	}
	// The target took the controller away: a path error the host fails
	// over (a subsystem that moved to another node), not an I/O error.
	s.io.expect(rw(nvme.IORead, 1, 0, 1, 0), make([]byte, 512), nvme.StatusInternalPathError)
	if err := s.tg.RemoveSubsystem(testSubNQN); err == nil {
		t.Fatal("second RemoveSubsystem succeeded")
	}
	if err := s.sub.AddNamespace(memNS(2, 8, 512)); err == nil {
		t.Fatal("AddNamespace on removed subsystem succeeded")
	}
	h := newHost(t, s.tg, 32)
	if r := h.connect(0, 31, 0, testSubNQN, testHostNQN, nvme.DynamicCNTLID); r.Status() != nvme.StatusConnectInvalidParam.WithDNR() {
		t.Fatalf("connect to removed subsystem: %v", r.Status())
	}
}
