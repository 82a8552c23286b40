package reconcile

import (
	"fmt"
	"hash/fnv"
	"sort"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
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
			if s.Node == d.self || !s.Allowed(host) {
				continue
			}
			for _, l := range st.Nodes[s.Node].Listeners {
				e := nvme.DiscoveryLogEntry{
					TrType: l.TrType, AdrFam: l.AdrFam, SubType: nvme.SubTypeNVM,
					TReq: nvme.TReqSecureNotSpecified, PortID: l.PortID, CNTLID: nvme.DynamicCNTLID,
					ASQSZ: 32, TrSvcID: l.TrSvcID, SubNQN: s.NQN, TrAddr: l.TrAddr,
				}
				if l.TrType == nvme.TrTypeRDMA {
					e.TSAS = nvme.RDMATSAS(nvme.RDMAQPTypeConnected, nvme.RDMAPrTypeRoCEv2, nvme.RDMACMSRDMACM, 0)
				}
				es = append(es, e)
			}
		}
	})
	return es
}

// remoteFingerprint hashes what DiscoveryEntries depends on, so a pass can
// tell whether discovery controllers must be told.
func remoteFingerprint(st *catalog.State, self string) string {
	h := fnv.New64a()
	var nqns []string
	for nqn, s := range st.Subsystems {
		if s.Node != self {
			nqns = append(nqns, nqn)
		}
	}
	sort.Strings(nqns)
	for _, nqn := range nqns {
		s := st.Subsystems[nqn]
		fmt.Fprintf(h, "%s|%s|%v|%v|%v\n", nqn, s.Node, s.AllowAnyHost, s.Hosts, st.Nodes[s.Node].Listeners)
	}
	return fmt.Sprintf("%x", h.Sum64())
}
