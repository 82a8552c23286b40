package target

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/nvme"
)

// Identify Controller string field sizes.
const (
	maxSerialLen = 20
	maxModelLen  = 40
	defaultModel = "rdmablk"
)

// SubsystemConfig describes an NVM subsystem.
type SubsystemConfig struct {
	// NQN names the subsystem (nvme.ValidNQN; not the discovery NQN).
	NQN string
	// Serial is Identify Controller SN: printable ASCII, at most 20 bytes.
	// Empty derives 16 hex digits from SHA-256 of the NQN (stable across
	// restarts, distinct per subsystem: hosts group paths by it).
	Serial string
	// Model is Identify Controller MN, printable ASCII, at most 40 bytes
	// (empty = "rdmablk").
	Model string
	// AllowAnyHost admits every host NQN; otherwise only Hosts.
	AllowAnyHost bool
	// Hosts are the host NQNs allowed to connect.
	Hosts []string
	// HostAuth holds the DH-HMAC-CHAP configuration of hosts, by host NQN
	// (auth.go): a host listed here must authenticate every queue. The
	// core keeps its own copy.
	HostAuth map[string]HostAuth
	// RequireAuth refuses every host without a HostAuth entry (Connect
	// Invalid Host), even one in Hosts or admitted by AllowAnyHost.
	// Without it, hosts that have no entry connect unauthenticated, as
	// with nvmet.
	RequireAuth bool
	// Namespaces are attached as by AddNamespace.
	Namespaces []NamespaceConfig
}

// Subsystem is an NVM subsystem (or the discovery subsystem, which is not
// returned by Target.Subsystems). Every method is safe for concurrent use.
type Subsystem struct {
	t         *Target
	nqn       string
	serial    string
	model     string
	discovery bool

	// ns is the namespace table, read lock-free by the I/O path.
	ns atomic.Pointer[nsTable]
	// nsMu serialises the writers of ns (attach, detach).
	nsMu sync.Mutex
	// ana holds the ANA states per (port, group), read lock-free by the
	// I/O path (ana.go).
	ana anaStates

	mu          sync.Mutex // guards hosts, allowAny, hostAuth, requireAuth, ctrls, nextCNTLID, removed
	hosts       map[string]struct{}
	allowAny    bool
	hostAuth    map[string]*HostAuth // immutable values; replaced, never changed
	requireAuth bool
	ctrls       map[uint16]*Controller
	nextCNTLID  uint16
	removed     bool
}

func newSubsystem(t *Target, nqn, serial, model string, discovery bool) *Subsystem {
	s := &Subsystem{
		t:          t,
		nqn:        nqn,
		serial:     serial,
		model:      model,
		discovery:  discovery,
		hosts:      make(map[string]struct{}),
		hostAuth:   make(map[string]*HostAuth),
		ctrls:      make(map[uint16]*Controller),
		nextCNTLID: t.opts.FirstCNTLID,
	}
	s.ns.Store(emptyTable)
	return s
}

// defaultSerial derives a serial number from an NQN.
func defaultSerial(nqn string) string {
	h := sha256.Sum256([]byte(nqn))
	return hex.EncodeToString(h[:8])
}

// printableASCII reports whether s only holds bytes 0x20..0x7E.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// AddSubsystem creates an NVM subsystem with its hosts and namespaces. The
// NQN must be valid (nvme.ValidNQN), not the discovery NQN, and unused.
// On error nothing is created. It bumps the discovery generation counter.
func (t *Target) AddSubsystem(c SubsystemConfig) (*Subsystem, error) {
	if !nvme.ValidNQN(c.NQN) || c.NQN == nvme.DiscoveryNQN {
		return nil, fmt.Errorf("%w: subsystem %q", ErrBadNQN, c.NQN)
	}
	if len(c.Serial) > maxSerialLen || !printableASCII(c.Serial) {
		return nil, fmt.Errorf("%w: serial %q (printable ASCII, ≤ %d bytes)", ErrBadConfig, c.Serial, maxSerialLen)
	}
	if len(c.Model) > maxModelLen || !printableASCII(c.Model) {
		return nil, fmt.Errorf("%w: model %q (printable ASCII, ≤ %d bytes)", ErrBadConfig, c.Model, maxModelLen)
	}
	serial := strings.TrimSpace(c.Serial)
	if serial == "" {
		serial = defaultSerial(c.NQN)
	}
	model := strings.TrimSpace(c.Model)
	if model == "" {
		model = defaultModel
	}
	s := newSubsystem(t, c.NQN, serial, model, false)
	s.allowAny = c.AllowAnyHost
	for _, h := range c.Hosts {
		if !nvme.ValidNQN(h) {
			return nil, fmt.Errorf("%w: host %q", ErrBadNQN, h)
		}
		s.hosts[h] = struct{}{}
	}
	for h, a := range c.HostAuth {
		if !nvme.ValidNQN(h) {
			return nil, fmt.Errorf("%w: host %q", ErrBadNQN, h)
		}
		if err := a.validate(h, c.NQN); err != nil {
			return nil, err
		}
		s.hostAuth[h] = a.clone()
	}
	s.requireAuth = c.RequireAuth
	tbl := emptyTable
	for _, nc := range c.Namespaces {
		n, err := newNamespace(c.NQN, nc)
		if err != nil {
			return nil, err
		}
		if tbl.get(nc.NSID) != nil {
			return nil, fmt.Errorf("%w: nsid %d", ErrNamespaceExists, nc.NSID)
		}
		tbl = tbl.with(n)
	}
	s.ns.Store(tbl)

	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	if _, ok := t.subsystems[c.NQN]; ok {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrSubsystemExists, c.NQN)
	}
	t.subsystems[c.NQN] = s
	t.mu.Unlock()
	t.discoveryChanged()
	return s, nil
}

// RemoveSubsystem removes subsystem nqn: new Connects to it fail, its
// controllers are torn down (QueueConn.Close on each of their queues, held
// AERs completed), and it waits for in-flight I/O on its namespaces. When
// it returns the core no longer uses any of the subsystem's backends; it
// does not close them. It bumps the discovery generation counter.
func (t *Target) RemoveSubsystem(nqn string) error {
	t.mu.Lock()
	s, ok := t.subsystems[nqn]
	if ok {
		delete(t.subsystems, nqn)
	}
	t.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSubsystem, nqn)
	}
	s.mu.Lock()
	s.removed = true
	s.mu.Unlock()
	t.discoveryChanged()
	conns := s.killControllers("subsystem removed")
	for _, c := range conns {
		c.Close()
	}
	s.detachAllNamespaces()
	return nil
}

// NQN returns the subsystem NQN.
func (s *Subsystem) NQN() string { return s.nqn }

// Serial returns the serial number reported in Identify Controller.
func (s *Subsystem) Serial() string { return s.serial }

// Model returns the model number reported in Identify Controller.
func (s *Subsystem) Model() string { return s.model }

// Namespaces returns the attached NSIDs, ascending.
func (s *Subsystem) Namespaces() []uint32 { return slices.Clone(s.ns.Load().ids) }

// Controllers returns the live controllers, ordered by controller ID.
func (s *Subsystem) Controllers() []*Controller {
	s.mu.Lock()
	cs := make([]*Controller, 0, len(s.ctrls))
	for _, c := range s.ctrls {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	slices.SortFunc(cs, func(a, b *Controller) int { return cmp.Compare(a.id, b.id) })
	return cs
}

// AddNamespace attaches a namespace. The caller keeps owning c.Backend.
// Every live controller gets the NSID in its Changed Namespace List and,
// if it enabled it, a Namespace Attribute Changed asynchronous event.
func (s *Subsystem) AddNamespace(c NamespaceConfig) error {
	if s.discovery {
		return fmt.Errorf("%w: the discovery subsystem has no namespaces", ErrBadConfig)
	}
	n, err := newNamespace(s.nqn, c)
	if err != nil {
		return err
	}
	s.nsMu.Lock()
	if s.isRemoved() || s.t.closed.Load() {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoSubsystem, s.nqn)
	}
	old := s.ns.Load()
	if old.get(c.NSID) != nil {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d", ErrNamespaceExists, c.NSID)
	}
	s.ns.Store(old.with(n))
	s.nsMu.Unlock()
	s.namespaceChanged(c.NSID)
	return nil
}

// RemoveNamespace detaches namespace nsid: new commands for it fail with
// Invalid Namespace, controllers get the Namespace Attribute Changed event
// as for AddNamespace, and it blocks until the commands already using the
// backend finished. Afterwards the core never touches the backend again;
// the owner closes it.
func (s *Subsystem) RemoveNamespace(nsid uint32) error {
	s.nsMu.Lock()
	old := s.ns.Load()
	n := old.get(nsid)
	if n == nil {
		s.nsMu.Unlock()
		return fmt.Errorf("%w: nsid %d", ErrNoNamespace, nsid)
	}
	s.ns.Store(old.without(nsid))
	s.nsMu.Unlock()
	drained := n.ref.close()
	s.namespaceChanged(nsid)
	<-drained
	return nil
}

// NotifyNamespaceChanged raises the Namespace Attribute Changed event for
// nsid on every live controller (e.g. after the backend was resized:
// Identify reports the backend's current Blocks).
func (s *Subsystem) NotifyNamespaceChanged(nsid uint32) { s.namespaceChanged(nsid) }

func (s *Subsystem) namespaceChanged(nsid uint32) {
	for _, c := range s.Controllers() {
		c.namespaceChanged(nsid)
	}
}

// detachAllNamespaces empties the namespace table and waits for in-flight
// commands on every namespace that was in it.
func (s *Subsystem) detachAllNamespaces() {
	s.nsMu.Lock()
	old := s.ns.Load()
	s.ns.Store(emptyTable)
	s.nsMu.Unlock()
	for _, n := range old.byID {
		if n != nil {
			<-n.ref.close()
		}
	}
}

// AddHost allows hostNQN to connect.
func (s *Subsystem) AddHost(hostNQN string) error {
	if !nvme.ValidNQN(hostNQN) {
		return fmt.Errorf("%w: host %q", ErrBadNQN, hostNQN)
	}
	s.mu.Lock()
	if _, ok := s.hosts[hostNQN]; ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrHostExists, hostNQN)
	}
	s.hosts[hostNQN] = struct{}{}
	s.mu.Unlock()
	s.t.discoveryChanged()
	return nil
}

// RemoveHost stops admitting hostNQN. Controllers it already has are left
// alone, but it can no longer connect new queues to them.
func (s *Subsystem) RemoveHost(hostNQN string) error {
	s.mu.Lock()
	if _, ok := s.hosts[hostNQN]; !ok {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNoHost, hostNQN)
	}
	delete(s.hosts, hostNQN)
	s.mu.Unlock()
	s.t.discoveryChanged()
	return nil
}

// SetAllowAnyHost sets whether every host may connect.
func (s *Subsystem) SetAllowAnyHost(allow bool) {
	s.mu.Lock()
	changed := s.allowAny != allow
	s.allowAny = allow
	s.mu.Unlock()
	if changed {
		s.t.discoveryChanged()
	}
}

// AllowAnyHost reports whether every host may connect.
func (s *Subsystem) AllowAnyHost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.allowAny
}

// Hosts returns the allowed host NQNs, sorted.
func (s *Subsystem) Hosts() []string {
	s.mu.Lock()
	hs := make([]string, 0, len(s.hosts))
	for h := range s.hosts {
		hs = append(hs, h)
	}
	s.mu.Unlock()
	slices.Sort(hs)
	return hs
}

// allowed reports whether hostNQN may connect.
func (s *Subsystem) allowed(hostNQN string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.allowAny {
		return true
	}
	_, ok := s.hosts[hostNQN]
	return ok
}

// SetHostAuth sets (a != nil) or removes (a == nil) the DH-HMAC-CHAP
// configuration of hostNQN. It applies to Connects from then on;
// controllers already created keep the configuration they started with
// (the host re-authenticates with the new secret after a reconnect).
func (s *Subsystem) SetHostAuth(hostNQN string, a *HostAuth) error {
	if !nvme.ValidNQN(hostNQN) {
		return fmt.Errorf("%w: host %q", ErrBadNQN, hostNQN)
	}
	var c *HostAuth
	if a != nil {
		if err := a.validate(hostNQN, s.nqn); err != nil {
			return err
		}
		c = a.clone()
	}
	s.mu.Lock()
	if c == nil {
		delete(s.hostAuth, hostNQN)
	} else {
		s.hostAuth[hostNQN] = c
	}
	s.mu.Unlock()
	return nil
}

// SetRequireAuth sets whether every host must authenticate
// (SubsystemConfig.RequireAuth); it applies to Connects from then on.
func (s *Subsystem) SetRequireAuth(require bool) {
	s.mu.Lock()
	s.requireAuth = require
	s.mu.Unlock()
}

// AuthHosts returns the host NQNs that have a DH-HMAC-CHAP configuration,
// sorted, and whether the subsystem requires authentication. The secrets
// are not returned.
func (s *Subsystem) AuthHosts() (hosts []string, required bool) {
	s.mu.Lock()
	for h := range s.hostAuth {
		hosts = append(hosts, h)
	}
	required = s.requireAuth
	s.mu.Unlock()
	slices.Sort(hosts)
	return hosts, required
}

// authFor returns hostNQN's DH-HMAC-CHAP configuration (nil: none) and
// whether the subsystem requires one.
func (s *Subsystem) authFor(hostNQN string) (*HostAuth, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostAuth[hostNQN], s.requireAuth
}

func (s *Subsystem) isRemoved() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.removed
}

// controller returns the live controller with ID id.
func (s *Subsystem) controller(id uint16) *Controller {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctrls[id]
}

// dropController unregisters c (its ID becomes free).
func (s *Subsystem) dropController(c *Controller) {
	s.mu.Lock()
	if s.ctrls[c.id] == c {
		delete(s.ctrls, c.id)
	}
	s.mu.Unlock()
}

// killControllers tears down every controller (see Controller.kill) and
// returns the connections to close, which it does not close itself.
func (s *Subsystem) killControllers(why string) []QueueConn {
	var conns []QueueConn
	for _, c := range s.Controllers() {
		conns = append(conns, c.kill(why)...)
	}
	return conns
}
