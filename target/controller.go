package target

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// aerLimit is the number of Asynchronous Event Requests a controller
// holds (Identify AERL is this minus one).
const aerLimit = 4

// Controller is a dynamic controller created by an admin-queue Connect
// (NVMe-oF dynamic controller model): an I/O controller of an NVM
// subsystem, or a discovery controller. It lives until its admin queue is
// destroyed, its keep-alive timer expires, or its subsystem or the target
// goes away.
type Controller struct {
	t         *Target
	subsys    *Subsystem
	id        uint16 // CNTLID; set once by Subsystem.addController
	hostNQN   string
	hostID    [16]byte
	discovery bool
	port      Port   // the port the admin queue came in on
	maxIOQ    uint16 // Options.MaxIOQueues (0 for discovery)

	// ready is CC.EN=1 && CSTS.RDY=1 && !CSTS.CFS && not shut down: the
	// I/O path and admin commands check it without taking mu.
	ready atomic.Bool
	// gone is set once the controller is dead (dieLocked): commands on
	// its queues are refused with a path error (queue.go statusRefused).
	gone atomic.Bool
	// hostAuth is the host's DH-HMAC-CHAP configuration, set at the admin
	// Connect and not changed afterwards (nil: no authentication).
	hostAuth *HostAuth
	// authed: the admin queue has authenticated (I/O queues may connect).
	authed atomic.Bool
	// activity records any command since the last keep-alive check
	// (traffic based keep alive, as nvmet).
	activity atomic.Bool
	// stats are the SMART / Health log counters (host read and write
	// commands, bytes), sharded like the Target's.
	stats counters

	mu        sync.Mutex // guards every field below
	cc, csts  uint32
	queues    []*Queue // by QID; len maxIOQ+1; nil = not connected
	ioQueues  uint16   // I/O queues granted (1-based), Set Features Number of Queues
	kato      time.Duration
	katoTimer timer      // on Target's clock
	aec       uint32     // Asynchronous Event Configuration
	aers      []*Request // held Asynchronous Event Requests, oldest first
	events    []uint32   // event results waiting for an AER
	masked    uint32     // AEC bits reported and not yet cleared by reading their log
	changedNS []uint32   // Changed Namespace List, unsorted, no duplicates
	changedOV bool       // more than nvme.NSListMax namespaces changed
	feat      featureValues
	dead      bool
}

// ID returns the controller ID (CNTLID).
func (c *Controller) ID() uint16 { return c.id }

// HostNQN returns the NQN of the host that created the controller.
func (c *Controller) HostNQN() string { return c.hostNQN }

// HostID returns the 128-bit host identifier from the Connect data.
func (c *Controller) HostID() [16]byte { return c.hostID }

// SubNQN returns the NQN of the controller's subsystem.
func (c *Controller) SubNQN() string { return c.subsys.nqn }

// IsDiscovery reports a discovery controller.
func (c *Controller) IsDiscovery() bool { return c.discovery }

// newController builds a controller for an admin-queue Connect and
// registers it in s. It returns nil when no controller ID is free or the
// subsystem is going away.
func newController(s *Subsystem, q *Queue, d *nvme.ConnectData, katoMS uint32, ha *HostAuth) *Controller {
	t := s.t
	c := &Controller{
		t:         t,
		subsys:    s,
		hostNQN:   d.HostNQN,
		hostID:    d.HostID,
		discovery: s.discovery,
		port:      q.port,
		feat:      defaultFeatures(),
		hostAuth:  ha,
	}
	if !s.discovery {
		c.maxIOQ = uint16(t.opts.MaxIOQueues)
	}
	c.ioQueues = c.maxIOQ
	c.queues = make([]*Queue, int(c.maxIOQ)+1)
	c.queues[0] = q
	c.kato = t.opts.kato(katoMS, s.discovery)
	if !s.addController(c) {
		return nil
	}
	c.mu.Lock()
	c.armKATOLocked()
	c.mu.Unlock()
	return c
}

// touch records traffic for the keep-alive timer. Queue goroutines call
// it for every command on any of the controller's queues, the Connect of
// an I/O queue included (a host sends no Keep Alive while it connects its
// I/O queues); it writes only when the flag is clear.
func (c *Controller) touch() {
	if !c.activity.Load() {
		c.activity.Store(true)
	}
}

// attachIO installs q as I/O queue qid (I/O queue Connect). It returns
// the status to complete the Connect with and the DW0 of a failure
// (IPO/IATTR of Connect Invalid Parameters).
func (c *Controller) attachIO(q *Queue, qid uint16) (nvme.Status, uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.dead:
		return nvme.StatusConnectInvalidParam.WithDNR(), connectIPO(true, connectDataCNTLIDOff)
	case qid > c.ioQueues || int(qid) >= len(c.queues):
		return nvme.StatusConnectInvalidParam.WithDNR(), connectIPO(false, connectSQEQIDOff)
	case !c.ready.Load():
		// I/O queue before CC.EN / after shutdown (nvmet: sequence error).
		return nvme.StatusCommandSequenceError.WithDNR(), 0
	case c.queues[qid] != nil:
		// Duplicate QID: nvmet_install_queue answers the same.
		return nvme.StatusCommandSequenceError.WithDNR(), 0
	}
	c.queues[qid] = q
	return nvme.StatusSuccess, 0
}

// detach removes q (Queue.Destroy). Losing the admin queue ends the
// controller: its other queues are closed and held AERs complete.
func (c *Controller) detach(q *Queue, qid uint16) {
	c.mu.Lock()
	if int(qid) < len(c.queues) && c.queues[qid] == q {
		c.queues[qid] = nil
	}
	if qid != 0 || c.dead {
		c.mu.Unlock()
		return
	}
	aers, conns := c.dieLocked()
	c.mu.Unlock()
	c.finishDeath(aers, conns, nvme.StatusAbortSQDeleted, "admin queue gone")
}

// kill ends the controller (KATO expiry, subsystem removal, target close)
// and returns the connections of its queues for the caller to close.
func (c *Controller) kill(why string) []QueueConn {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return nil
	}
	aers, conns := c.dieLocked()
	c.mu.Unlock()
	c.finishDeath(aers, nil, statusRefused, why)
	return conns
}

// dieLocked marks c dead and collects what must be completed or closed
// once mu is released.
func (c *Controller) dieLocked() (aers []*Request, conns []QueueConn) {
	c.dead = true
	c.gone.Store(true)
	c.ready.Store(false)
	if c.katoTimer != nil {
		c.katoTimer.Stop()
		c.katoTimer = nil
	}
	aers, c.aers = c.aers, nil
	c.events = nil
	for _, q := range c.queues {
		if q != nil {
			conns = append(conns, q.conn)
		}
	}
	return aers, conns
}

// finishDeath unregisters a dead controller, completes its held AERs with
// st (SQ deletion when the host took the admin queue away, else the path
// error of a target-side teardown) and closes conns. Called without mu.
func (c *Controller) finishDeath(aers []*Request, conns []QueueConn, st nvme.Status, why string) {
	c.subsys.dropController(c)
	for _, r := range aers {
		r.core.q.completeAsync(r, st)
	}
	for _, conn := range conns {
		conn.Close()
	}
	c.t.log.Info("nvmet: controller removed", "subnqn", c.subsys.nqn, "cntlid", c.id,
		"hostnqn", c.hostNQN, "reason", why)
}

// armKATOLocked starts or re-arms the keep-alive timer for c.kato (stops
// it when keep alive is disabled). It runs at the admin Connect (so that
// a host that dies before enabling the controller is reaped), again when
// the controller becomes ready (CC.EN → CSTS.RDY: the timeout a host
// expects starts there, as nvmet_start_ctrl does) and on Set Features
// Keep Alive Timer.
func (c *Controller) armKATOLocked() {
	if c.dead {
		return
	}
	if c.kato == 0 {
		if c.katoTimer != nil {
			c.katoTimer.Stop()
			c.katoTimer = nil
		}
		return
	}
	if c.katoTimer == nil {
		c.katoTimer = c.t.opts.clock.AfterFunc(c.kato, c.katoCheck)
		return
	}
	c.katoTimer.Reset(c.kato)
}

// katoCheck runs on the timer goroutine every KATO: traffic since the last
// check re-arms the timer; none is a keep-alive expiry, which is fatal
// for the controller (CSTS.CFS, every queue closed). As in nvmet, the
// effective timeout is between KATO and twice KATO after the last command.
func (c *Controller) katoCheck() {
	c.mu.Lock()
	if c.dead || c.katoTimer == nil {
		c.mu.Unlock()
		return
	}
	// The admin queue's first authentication counts as activity: the
	// host may spend longer than KATO on one DH computation (ffdhe8192
	// on a slow CPU), and it cannot send Keep Alive before it has
	// authenticated. authTimeout bounds that phase instead.
	if c.activity.Swap(false) || c.hostAuth != nil && !c.authed.Load() {
		c.katoTimer.Reset(c.kato)
		c.mu.Unlock()
		return
	}
	kato := c.kato
	c.csts |= nvme.CSTSCFS
	aers, conns := c.dieLocked()
	c.mu.Unlock()
	c.t.kaExpiries.Add(1)
	c.t.log.Warn("nvmet: keep alive timer expired, controller fatal", "subnqn", c.subsys.nqn,
		"cntlid", c.id, "hostnqn", c.hostNQN, "kato", kato)
	c.finishDeath(aers, conns, statusRefused, "keep alive expired")
}

// setKATO applies a Set Features Keep Alive Timer value (ms).
func (c *Controller) setKATO(ms uint32) {
	c.mu.Lock()
	c.kato = c.t.opts.kato(ms, c.discovery)
	c.activity.Store(true)
	c.armKATOLocked()
	c.mu.Unlock()
}

// raiseEvent reports an asynchronous event of AEC class bit with CQE DW0
// result: completed on a held AER, or queued for the next one. Nothing is
// reported when the host did not enable the class or an event of the class
// is still unacknowledged (its log page not read). Any goroutine.
func (c *Controller) raiseEvent(bit, result uint32) {
	c.mu.Lock()
	if c.dead || c.aec&bit == 0 || c.masked&bit != 0 {
		c.mu.Unlock()
		return
	}
	c.masked |= bit
	var r *Request
	if len(c.aers) > 0 {
		r = c.aers[0]
		c.aers = append(c.aers[:0], c.aers[1:]...)
	} else {
		c.events = append(c.events, result)
	}
	c.mu.Unlock()
	if r != nil {
		r.CQE.SetDW0(result)
		r.core.q.completeAsync(r, nvme.StatusSuccess)
	}
}

// unmask re-enables reporting of event class bit (its log page was read).
func (c *Controller) unmask(bit uint32) {
	c.mu.Lock()
	c.masked &^= bit
	c.mu.Unlock()
}

// namespaceChanged records nsid in the Changed Namespace List and raises
// the Namespace Attribute Changed notice.
func (c *Controller) namespaceChanged(nsid uint32) {
	if c.discovery {
		return
	}
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	if !c.changedOV {
		found := false
		for _, id := range c.changedNS {
			if id == nsid {
				found = true
				break
			}
		}
		if !found {
			if len(c.changedNS) >= nvme.NSListMax {
				c.changedOV = true
				c.changedNS = nil
			} else {
				c.changedNS = append(c.changedNS, nsid)
			}
		}
	}
	c.mu.Unlock()
	c.raiseEvent(nvme.AECNSAttr,
		nvme.MakeAsyncEventResult(nvme.AsyncEventTypeNotice, nvme.AsyncEventNoticeNSChanged, nvme.LogChangedNSList))
}

// asyncEventRequest handles an Asynchronous Event Request: completed at
// once when an event is queued, rejected beyond aerLimit, else held. When
// it returns done=false the request may already have been completed by
// another goroutine.
func (c *Controller) asyncEventRequest(r *Request) (nvme.Status, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.events) > 0 {
		r.CQE.SetDW0(c.events[0])
		c.events = append(c.events[:0], c.events[1:]...)
		return nvme.StatusSuccess, true
	}
	if len(c.aers) >= aerLimit {
		return nvme.StatusAsyncLimit.WithDNR(), true
	}
	r.core.state = stateHeld
	c.aers = append(c.aers, r)
	return 0, false
}
