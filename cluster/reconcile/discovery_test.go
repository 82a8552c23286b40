package reconcile

import (
	"testing"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// TestDiscoveryEntriesFromListeners: entries for subsystems on other
// nodes come from the core's formatter with each listener's own transport
// type and TSAS (RDMA and TCP alike), the core's admin queue size, and
// only for hosts the subsystem admits; the node's own subsystems are left
// to the target.
func TestDiscoveryEntriesFromListeners(t *testing.T) {
	rdmaTSAS := nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0)
	st := catalog.New()
	st.Nodes["n1"] = catalog.Node{ID: "n1", Listeners: []catalog.Listener{{PortID: 1, TrType: nvme.TrTypeRDMA, TrAddr: "192.0.2.1", TrSvcID: "4420"}}}
	st.Nodes["n2"] = catalog.Node{ID: "n2", Listeners: []catalog.Listener{
		{PortID: 1, TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4, TrAddr: "192.0.2.2", TrSvcID: "4420", TSAS: EncodeTSAS(rdmaTSAS)},
		{PortID: 2, TrType: nvme.TrTypeTCP, AdrFam: nvme.AdrFamIPv4, TrAddr: "192.0.2.2", TrSvcID: "4420"},
		{PortID: 3, TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv6, TrAddr: "2001:db8::2", TrSvcID: "4421"}, // recorded without TSAS
	}}
	st.Subsystems["nqn.2026-11.io.rdmablk:remote"] = catalog.Subsystem{NQN: "nqn.2026-11.io.rdmablk:remote", Node: "n2", Hosts: []string{fpHost}}
	st.Subsystems["nqn.2026-11.io.rdmablk:local"] = catalog.Subsystem{NQN: "nqn.2026-11.io.rdmablk:local", Node: "n1", AllowAnyHost: true}
	d := NewDiscovery("n1")
	d.SetCatalog(staticCatalog{st})

	if es := d.DiscoveryEntries("nqn.2014-08.org.nvmexpress:uuid:other"); len(es) != 0 {
		t.Fatalf("entries for a host the subsystem does not admit: %+v", es)
	}
	es := d.DiscoveryEntries(fpHost)
	if len(es) != 3 {
		t.Fatalf("%d entries, want 3: %+v", len(es), es)
	}
	for i, l := range st.Nodes["n2"].Listeners {
		p := ListenerPort(l)
		if want := p.DiscoveryEntry("nqn.2026-11.io.rdmablk:remote"); es[i] != want {
			t.Errorf("entry %d\n got %+v\nwant %+v", i, es[i], want)
		}
		if es[i].ASQSZ != 32 || es[i].TrType != l.TrType || es[i].PortID != l.PortID {
			t.Errorf("entry %d: %+v", i, es[i])
		}
	}
	if es[0].TSAS != rdmaTSAS || es[2].TSAS != rdmaTSAS {
		t.Error("RDMA listeners lost their TSAS")
	}
	if es[1].TSAS != ([256]byte{}) {
		t.Errorf("TCP listener got TSAS % x", es[1].TSAS[:4])
	}
}

func TestTSASEncoding(t *testing.T) {
	var tsas [256]byte
	tsas[0], tsas[1], tsas[3] = 1, 2, 9
	s := EncodeTSAS(tsas)
	if s != "01020009" {
		t.Fatalf("EncodeTSAS %q", s)
	}
	if got, ok := DecodeTSAS(s); !ok || got != tsas {
		t.Fatalf("DecodeTSAS(%q) = %v", s, ok)
	}
	for _, bad := range []string{"0", "zz", string(make([]byte, 514))} {
		if _, ok := DecodeTSAS(bad); ok {
			t.Errorf("DecodeTSAS(%q) accepted", bad[:min(len(bad), 8)])
		}
	}
	if EncodeTSAS([256]byte{}) != "" {
		t.Fatal("zero TSAS not empty")
	}
	var _ target.DiscoverySource = NewDiscovery("x")
}

// TestDiscoveryListsEveryCopyNode: the export of a replicated volume is
// listed on every node that holds a copy (the owner and the replicas,
// each reporting its ANA state), except this node's own listeners.
func TestDiscoveryListsEveryCopyNode(t *testing.T) {
	st := catalog.New()
	for i, id := range []string{"n1", "n2", "n3"} {
		st.Nodes[id] = catalog.Node{ID: id, Listeners: []catalog.Listener{{PortID: 1, TrType: nvme.TrTypeRDMA, AdrFam: nvme.AdrFamIPv4,
			TrAddr: "192.0.2." + string(rune('1'+i)), TrSvcID: "4420"}}}
	}
	const nqn = "nqn.2026-11.io.rdmablk:rep"
	st.Volumes["rv"] = catalog.Volume{Name: "rv", Node: "n2", Path: "rv.img", Replicas: 2, ReplicaSet: []catalog.Replica{
		{Node: "n2", Path: "rv.img", State: catalog.ReplicaInSync}, {Node: "n3", Path: "rv.img", State: catalog.ReplicaInSync}}}
	st.Subsystems[nqn] = catalog.Subsystem{NQN: nqn, Node: "n2", AllowAnyHost: true, Namespaces: map[uint32]string{1: "rv"}}
	d := NewDiscovery("n1")
	d.SetCatalog(staticCatalog{st})
	es := d.DiscoveryEntries(fpHost)
	if len(es) != 2 || es[0].TrAddr != "192.0.2.2" || es[1].TrAddr != "192.0.2.3" {
		t.Fatalf("entries %+v, want n2's and n3's listeners", es)
	}
	d = NewDiscovery("n3")
	d.SetCatalog(staticCatalog{st})
	if es := d.DiscoveryEntries(fpHost); len(es) != 1 || es[0].TrAddr != "192.0.2.2" {
		t.Fatalf("n3's remote entries %+v, want n2's only", es)
	}
}
