package reconcile

import (
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"sort"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// Discovery is a target.DiscoverySource listing the subsystems other
// nodes serve, on those nodes' listeners. Create it before the target
// (target.Options.Discovery) and give it the catalogue with SetCatalog
// once the cluster node is up; until then it adds nothing.
type Discovery struct {
	self string
	cat  atomic.Pointer[catalogRef]
}

type catalogRef struct{ c Catalog }

// NewDiscovery returns the source for node self.
func NewDiscovery(self string) *Discovery { return &Discovery{self: self} }

// SetCatalog starts serving entries from c.
func (d *Discovery) SetCatalog(c Catalog) { d.cat.Store(&catalogRef{c}) }

// DiscoveryEntries implements target.DiscoverySource.
func (d *Discovery) DiscoveryEntries(host string) []nvme.DiscoveryLogEntry {
	ref := d.cat.Load()
	if ref == nil {
		return nil
	}
	var es []nvme.DiscoveryLogEntry
	ref.c.View(func(st *catalog.State) {
		for _, s := range st.SubsystemList() {
			if !s.Allowed(host) {
				continue
			}
			// Every node that serves it (a replicated volume's export is
			// served by each copy's node, with its own ANA state): the
			// host's multipath sees every path. This node's own
			// listeners the target lists itself.
			for _, n := range st.SubsystemNodes(s.NQN) {
				if n == d.self {
					continue
				}
				for _, l := range st.Nodes[n].Listeners {
					p := ListenerPort(l)
					es = append(es, p.DiscoveryEntry(s.NQN))
				}
			}
		}
	})
	return es
}

// ListenerPort is the target.Port another node's catalogue listener
// stands for, so that its discovery entries come from the same formatter
// (target.Port.DiscoveryEntry) as the local ones. Listeners recorded
// before the catalogue kept their TSAS get the one every rdmablkd RDMA
// listener had then (reliable connected QP, RoCE v2, RDMA CM).
func ListenerPort(l catalog.Listener) target.Port {
	p := target.Port{ID: l.PortID, TrType: l.TrType, AdrFam: l.AdrFam, TrAddr: l.TrAddr, TrSvcID: l.TrSvcID}
	if t, ok := DecodeTSAS(l.TSAS); ok && l.TSAS != "" {
		p.TSAS = t
	} else if l.TrType == nvme.TrTypeRDMA {
		p.TSAS = nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0)
	}
	return p
}

// EncodeTSAS is the catalogue form of a TSAS: hex, trailing zero bytes
// dropped.
func EncodeTSAS(t [256]byte) string {
	n := len(t)
	for n > 0 && t[n-1] == 0 {
		n--
	}
	return hex.EncodeToString(t[:n])
}

// DecodeTSAS reverses EncodeTSAS; false for malformed input.
func DecodeTSAS(s string) ([256]byte, bool) {
	var t [256]byte
	if hex.DecodedLen(len(s)) > len(t) {
		return t, false
	}
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		return [256]byte{}, false
	}
	return t, true
}

// remoteFingerprint hashes what DiscoveryEntries depends on, so a pass can
// tell whether discovery controllers must be told.
func remoteFingerprint(st *catalog.State, self string) string {
	h := fnv.New64a()
	var nqns []string
	for nqn := range st.Subsystems {
		nqns = append(nqns, nqn)
	}
	sort.Strings(nqns)
	for _, nqn := range nqns {
		s := st.Subsystems[nqn]
		for _, n := range st.SubsystemNodes(nqn) {
			if n != self {
				fmt.Fprintf(h, "%s|%s|%v|%v|%v\n", nqn, n, s.AllowAnyHost, s.Hosts, st.Nodes[n].Listeners)
			}
		}
	}
	return fmt.Sprintf("%x", h.Sum64())
}
