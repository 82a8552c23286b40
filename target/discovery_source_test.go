package target

import (
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// fakeSource serves a fixed entry list to every host but one.
type fakeSource struct {
	mu      sync.Mutex
	entries []nvme.DiscoveryLogEntry
	deny    string
}

func (f *fakeSource) DiscoveryEntries(host string) []nvme.DiscoveryLogEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	if host == f.deny {
		return nil
	}
	return append([]nvme.DiscoveryLogEntry(nil), f.entries...)
}

func TestDiscoverySource(t *testing.T) {
	remote := nvme.DiscoveryLogEntry{
		TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4, SubType: nvme.SubTypeNVM,
		PortID: 7, CNTLID: nvme.DynamicCNTLID, ASQSZ: 32,
		TrSvcID: "4421", SubNQN: testSubNQN2, TrAddr: "203.0.113.9",
	}
	src := &fakeSource{deny: otherHost}
	tg := newTestTarget(t, Options{Discovery: src})
	if _, err := tg.AddSubsystem(SubsystemConfig{NQN: testSubNQN, AllowAnyHost: true}); err != nil {
		t.Fatal(err)
	}
	d := newHost(t, tg, 32)
	d.connectAdmin(nvme.DiscoveryNQN, testHostNQN, 0)
	d.enable()
	hdr, es, err := nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(4)), 0, false, nvme.StatusSuccess))
	if err != nil || len(es) != 1 || es[0].SubNQN != testSubNQN {
		t.Fatalf("before: %v %+v", err, es)
	}

	d.setFeature(nvme.FeatAsyncEventConfig, nvme.AECDiscoveryChange, nvme.StatusSuccess)
	r, done := d.aer()
	if done {
		t.Fatal("AER completed at once")
	}
	src.mu.Lock()
	src.entries = []nvme.DiscoveryLogEntry{remote}
	src.mu.Unlock()
	tg.NotifyDiscoveryChanged()
	d.wait(r)
	if typ, info, _ := nvme.ParseAsyncEventResult(r.CQE.DW0()); typ != nvme.AsyncEventTypeNotice || info != nvme.AsyncEventNoticeDiscoveryChange {
		t.Fatalf("AER %#x", r.CQE.DW0())
	}
	hdr2, es, err := nvme.ParseDiscoveryLog(d.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(4)), 0, false, nvme.StatusSuccess))
	if err != nil || hdr2.GenCtr == hdr.GenCtr || len(es) != 2 || es[0].SubNQN != testSubNQN || es[1] != remote {
		t.Fatalf("after: genctr %d→%d %v %+v", hdr.GenCtr, hdr2.GenCtr, err, es)
	}

	// The source filters by host.
	o := newHost(t, tg, 32)
	o.connectAdmin(nvme.DiscoveryNQN, otherHost, 0)
	o.enable()
	if _, es, _ := nvme.ParseDiscoveryLog(o.getLog(nvme.LogDiscovery, uint32(nvme.DiscoveryLogSize(4)), 0, false, nvme.StatusSuccess)); len(es) != 1 {
		t.Fatalf("denied host sees %d entries", len(es))
	}
}
