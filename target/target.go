package target

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/nvme"
)

// Target is an NVMe-oF target: ports (transport listeners, data only),
// NVM subsystems, and the well-known discovery subsystem. Create it with
// New; every method is safe for concurrent use.
type Target struct {
	opts Options
	log  *slog.Logger
	pool *workerPool
	disc *Subsystem // the discovery subsystem; immutable pointer

	closed     atomic.Bool
	genctr     atomic.Uint64 // discovery log generation counter
	kaExpiries atomic.Uint64
	// authFailures counts controllers torn down by a failed DH-HMAC-CHAP
	// authentication (auth.go).
	authFailures atomic.Uint64
	// noSpaceErrs counts Capacity Exceeded completions (nospace.go).
	noSpaceErrs atomic.Uint64
	// noSpaceLogged rate-limits the log of full-store errors that belong
	// to no single namespace (flush of every namespace).
	noSpaceLogged atomic.Int64
	queueSeq      atomic.Uint32 // assigns queues to counter shards
	cntlids       atomic.Uint32 // controller ID range, packCNTLIDRange(first, last) (cntlid.go)
	stats         counters

	mu         sync.Mutex // guards ports, subsystems and queues
	ports      map[uint16]Port
	subsystems map[string]*Subsystem
	queues     map[*Queue]struct{}
}

// New returns a running Target with no ports and no subsystems. It starts
// opts.Workers worker goroutines; Close stops them.
func New(opts Options) *Target {
	opts = opts.withDefaults()
	t := &Target{
		opts:       opts,
		log:        opts.Logger,
		ports:      make(map[uint16]Port),
		subsystems: make(map[string]*Subsystem),
		queues:     make(map[*Queue]struct{}),
	}
	if opts.LastCNTLID != 0 {
		t.cntlids.Store(packCNTLIDRange(opts.FirstCNTLID, opts.LastCNTLID))
	} else {
		t.cntlids.Store(packCNTLIDRange(minCNTLID, maxCNTLID))
	}
	t.disc = newSubsystem(t, nvme.DiscoveryNQN, defaultSerial(nvme.DiscoveryNQN), "rdmablk discovery", true)
	t.disc.allowAny = true
	t.pool = newWorkerPool(opts.Workers)
	return t
}

// Close tears the target down: every controller is marked dead (keep-alive
// timers stopped, held Asynchronous Event Requests completed with Command
// Aborted due to SQ Deletion), every queue's QueueConn.Close is called,
// in-flight commands on every namespace are waited for, and the worker
// goroutines stop. Commands a transport still executes afterwards complete
// with an error status without touching any backend, so the owners may
// close their backends once Close returned. Later calls return nil.
// It blocks; do not call it from a transport's queue goroutine.
func (t *Target) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.mu.Lock()
	subs := make([]*Subsystem, 0, len(t.subsystems)+1)
	subs = append(subs, t.disc)
	for _, s := range t.subsystems {
		subs = append(subs, s)
	}
	queues := make([]*Queue, 0, len(t.queues))
	for q := range t.queues {
		queues = append(queues, q)
	}
	t.mu.Unlock()

	for _, s := range subs {
		s.killControllers("target closing")
	}
	for _, q := range queues {
		q.conn.Close()
	}
	for _, s := range subs {
		s.detachAllNamespaces()
	}
	t.pool.stop()
	t.log.Info("nvmet: target closed", "queues", len(queues))
	return nil
}

// AddPort registers a transport listener so that NewQueue accepts queues
// on it and the discovery log lists it. The ID must be unused. Caps must
// give MaxDataTransfer ≥ 8192, MaxQueueDepth 2..65536 and an
// InCapsuleDataSize that is a non-negative multiple of 16; TrAddr must fit
// 256 bytes and TrSvcID 32 bytes.
func (t *Target) AddPort(p Port) error {
	c := p.Caps
	switch {
	case c.MaxDataTransfer < 8192:
		// Identify MDTS counts 4 KiB pages as a power of two and 0 means
		// "unlimited", so 8 KiB is the smallest expressible limit.
		return fmt.Errorf("%w: port %d: MaxDataTransfer %d < 8192", ErrBadPort, p.ID, c.MaxDataTransfer)
	case c.MaxQueueDepth < 2 || c.MaxQueueDepth > 65536:
		return fmt.Errorf("%w: port %d: MaxQueueDepth %d", ErrBadPort, p.ID, c.MaxQueueDepth)
	case c.InCapsuleDataSize < 0 || c.InCapsuleDataSize%16 != 0:
		return fmt.Errorf("%w: port %d: InCapsuleDataSize %d", ErrBadPort, p.ID, c.InCapsuleDataSize)
	case c.MaxSGLDescriptors < 0 || c.MaxSGLDescriptors > 255:
		return fmt.Errorf("%w: port %d: MaxSGLDescriptors %d", ErrBadPort, p.ID, c.MaxSGLDescriptors)
	case c.InCapsuleDataOffset < 0 || c.InCapsuleDataOffset > 0xFFFF:
		return fmt.Errorf("%w: port %d: InCapsuleDataOffset %d", ErrBadPort, p.ID, c.InCapsuleDataOffset)
	case c.ResponseCapsuleSize != 0 && (c.ResponseCapsuleSize < 16 || c.ResponseCapsuleSize%16 != 0 || c.ResponseCapsuleSize > 1<<20):
		return fmt.Errorf("%w: port %d: ResponseCapsuleSize %d", ErrBadPort, p.ID, c.ResponseCapsuleSize)
	case c.TrType != 0 && c.TrType != p.TrType:
		return fmt.Errorf("%w: port %d: transport type %d in the port, %d in its capabilities", ErrBadPort, p.ID, p.TrType, c.TrType)
	case len(p.TrAddr) > 256 || len(p.TrSvcID) > 32:
		return fmt.Errorf("%w: port %d: address too long", ErrBadPort, p.ID)
	}
	t.mu.Lock()
	if t.closed.Load() {
		t.mu.Unlock()
		return ErrClosed
	}
	if _, ok := t.ports[p.ID]; ok {
		t.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrPortExists, p.ID)
	}
	t.ports[p.ID] = p
	t.mu.Unlock()
	t.discoveryChanged()
	return nil
}

// RemovePort unregisters a port: NewQueue rejects it and the discovery log
// no longer lists it. Queues already created on it are left alone (the
// transport owns the listener and its connections).
func (t *Target) RemovePort(id uint16) error {
	t.mu.Lock()
	if _, ok := t.ports[id]; !ok {
		t.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrNoPort, id)
	}
	delete(t.ports, id)
	t.mu.Unlock()
	t.discoveryChanged()
	return nil
}

// Ports returns the ports, ordered by ID.
func (t *Target) Ports() []Port {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.portsLocked()
}

func (t *Target) portsLocked() []Port {
	ps := make([]Port, 0, len(t.ports))
	for _, p := range t.ports {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b Port) int { return cmp.Compare(a.ID, b.ID) })
	return ps
}

// Subsystem returns the NVM subsystem named nqn (never the discovery
// subsystem).
func (t *Target) Subsystem(nqn string) (*Subsystem, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.subsystems[nqn]
	return s, ok
}

// Subsystems returns the NVM subsystems ordered by NQN.
func (t *Target) Subsystems() []*Subsystem {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subsystemsLocked()
}

func (t *Target) subsystemsLocked() []*Subsystem {
	ss := make([]*Subsystem, 0, len(t.subsystems))
	for _, s := range t.subsystems {
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b *Subsystem) int { return cmp.Compare(a.nqn, b.nqn) })
	return ss
}

// lookupSubsystem finds the subsystem a Connect names, the discovery
// subsystem included; nil if unknown.
func (t *Target) lookupSubsystem(nqn string) *Subsystem {
	if nqn == nvme.DiscoveryNQN {
		return t.disc
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.subsystems[nqn]
}

// NewQueue creates the core side of a transport connection on port portID.
// depth is the number of submission queue entries the transport negotiated
// (RDMA: hsqsize+1); the Connect command's SQSIZE must be below it. The
// queue belongs to no controller until a Connect command succeeds on it.
// Any goroutine; the returned Queue is then driven by one transport
// goroutine (Execute, Destroy).
func (t *Target) NewQueue(portID uint16, conn QueueConn, depth int) (*Queue, error) {
	if conn == nil {
		return nil, fmt.Errorf("%w: nil QueueConn", ErrBadConfig)
	}
	if depth < 2 || depth > 65536 {
		return nil, fmt.Errorf("%w: %d", ErrBadDepth, depth)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed.Load() {
		return nil, ErrClosed
	}
	p, ok := t.ports[portID]
	if !ok {
		return nil, fmt.Errorf("%w: %d", ErrNoPort, portID)
	}
	idx := t.queueSeq.Add(1) % statShards
	q := &Queue{
		t:     t,
		port:  p,
		conn:  conn,
		depth: uint32(depth),
		size:  uint32(depth),
		shard: idx,
		stats: &t.stats[idx],
	}
	t.queues[q] = struct{}{}
	return q, nil
}

// forgetQueue drops q from the queue set (Queue.Destroy).
func (t *Target) forgetQueue(q *Queue) {
	t.mu.Lock()
	delete(t.queues, q)
	t.mu.Unlock()
}

// Stats returns a snapshot of the counters. Any goroutine; it takes the
// control-path locks briefly, never the I/O path's.
func (t *Target) Stats() Stats {
	var st Stats
	t.stats.sum(&st)
	st.KeepAliveExpiries = t.kaExpiries.Load()
	st.AuthFailures = t.authFailures.Load()
	st.CapacityExceeded = t.noSpaceErrs.Load()
	t.mu.Lock()
	st.Ports = len(t.ports)
	st.Subsystems = len(t.subsystems)
	st.Queues = len(t.queues)
	subs := append(t.subsystemsLocked(), t.disc)
	t.mu.Unlock()
	for _, s := range subs {
		st.Namespaces += len(s.ns.Load().ids)
		st.Controllers += len(s.Controllers())
	}
	return st
}

// discoveryChanged bumps the discovery log generation counter and raises
// the Discovery Log Page Change event on every discovery controller that
// enabled it.
func (t *Target) discoveryChanged() {
	t.genctr.Add(1)
	for _, c := range t.disc.Controllers() {
		c.raiseEvent(nvme.AECDiscoveryChange,
			nvme.MakeAsyncEventResult(nvme.AsyncEventTypeNotice, nvme.AsyncEventNoticeDiscoveryChange, nvme.LogDiscovery))
	}
}
