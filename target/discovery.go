package target

import "github.com/rdmablk/rdmablk/nvme"

// Discovery log entry constants.
const (
	// discoveryASQSZ is the admin SQ size the entries advertise (the
	// largest admin queue Connect accepts).
	discoveryASQSZ = maxAdminSQSize + 1
)

// discoveryEntries lists what host may connect to: every NVM subsystem that
// admits it, on every port (subsystems are not bound to ports here).
func (t *Target) discoveryEntries(host string) (uint64, []nvme.DiscoveryLogEntry) {
	genctr := t.genctr.Load()
	t.mu.Lock()
	ports := t.portsLocked()
	subs := t.subsystemsLocked()
	t.mu.Unlock()
	var es []nvme.DiscoveryLogEntry
	for _, s := range subs {
		if !s.allowed(host) {
			continue
		}
		for _, p := range ports {
			es = append(es, p.DiscoveryEntry(s.nqn))
		}
	}
	if src := t.opts.Discovery; src != nil {
		es = append(es, src.DiscoveryEntries(host)...)
	}
	return genctr, es
}

// DiscoveryEntry is the Discovery log page entry (NVMe-oF 1.1 §5.3,
// Figure 38) that points a host at NVM subsystem subNQN through port p:
// the port's transport facts (TRTYPE, ADRFAM, TRADDR, TRSVCID and TSAS,
// set by its transport), the dynamic controller model and the admin queue
// size this core accepts. The one formatter for entries of this target's
// own ports and for those a DiscoverySource builds from another node's
// listeners (which run the same core).
func (p *Port) DiscoveryEntry(subNQN string) nvme.DiscoveryLogEntry {
	return nvme.DiscoveryLogEntry{
		TrType:  p.TrType,
		AdrFam:  p.AdrFam,
		SubType: nvme.SubTypeNVM,
		TReq:    nvme.TReqSecureNotSpecified,
		PortID:  p.ID,
		CNTLID:  nvme.DynamicCNTLID,
		ASQSZ:   discoveryASQSZ,
		TrSvcID: p.TrSvcID,
		SubNQN:  subNQN,
		TrAddr:  p.TrAddr,
		TSAS:    p.TSAS,
	}
}

// DiscoverySource supplies discovery log entries beyond the target's own
// ports × subsystems: subsystems reachable elsewhere (other cluster nodes'
// listeners). Set it with Options.Discovery.
//
// DiscoveryEntries is called by the core each time a discovery controller
// of host reads the Discovery log page, on that controller's queue
// goroutine, with no core lock held. It must not block for long and must
// filter by host itself (only subsystems that admit host). The returned
// slice is only read, and not retained, by the core; entries are appended
// after the target's own. After the entries it would return changed, the
// source calls Target.NotifyDiscoveryChanged.
type DiscoverySource interface {
	DiscoveryEntries(hostNQN string) []nvme.DiscoveryLogEntry
}

// NotifyDiscoveryChanged bumps the discovery log generation counter and
// raises the Discovery Log Page Change event on the discovery controllers
// that enabled it. Options.Discovery calls it when its entries changed.
// Any goroutine.
func (t *Target) NotifyDiscoveryChanged() { t.discoveryChanged() }

// discoveryLog serves the Discovery log page (LID 70h) of a discovery
// controller. Reading it without RAE re-arms the discovery change event.
// GENCTR is sampled before the entries, so an entry list changed during
// the read is never paired with a newer counter: a host that compares the
// counters of two reads re-reads.
func (c *Controller) discoveryLog(b []byte, off uint64, rae bool) nvme.Status {
	genctr, es := c.t.discoveryEntries(c.hostNQN)
	page := make([]byte, nvme.DiscoveryLogSize(len(es)))
	if err := nvme.MarshalDiscoveryLog(page, genctr, es); err != nil {
		return nvme.StatusInternalError // AddPort validated the strings
	}
	if !rae {
		c.unmask(nvme.AECDiscoveryChange)
	}
	return copyLog(b, page, off)
}
