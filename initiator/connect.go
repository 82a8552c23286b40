package initiator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rdmablk/rdmablk/internal/idmap"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// Connect connects to subsystem subNQN at addr ("host:port": the RDMA CM
// address of the target's port, or its NVMe/TCP address; a "tcp://" or
// "rdma://" prefix overrides Options.Transport): admin queue, controller enable, Identify,
// Number of Queues, asynchronous events, the I/O queues, and the active
// namespaces. It honours ctx and Options.ConnectTimeout. Errors carry the
// cause: a *ConnectRejectedError for an RDMA CM reject, a *StatusError
// (errors.Is(err, nvme.StatusConnectInvalidHost)...) for a failed NVMe
// command, an *AuthError when in-band authentication (Options.DHCHAPSecret)
// failed or was required without a secret.
func Connect(ctx context.Context, addr, subNQN string, opts Options) (*Controller, error) {
	tr, addr, err := checkTransport(addr, &opts)
	if err != nil {
		return nil, err
	}
	if subNQN == "" || len(subNQN) > nvme.MaxNQNLength {
		return nil, fmt.Errorf("%w: subsystem NQN %q", ErrInvalid, subNQN)
	}
	if err := checkAuthOptions(&opts); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	c := newController(addr, subNQN, opts)
	c.tr = tr
	if err := c.bringUp(ctx, false); err != nil {
		c.abort()
		return nil, err
	}
	c.startMuxes()
	c.log.Info("nvme-of controller connected", "transport", tr, "addr", addr, "subnqn", subNQN, "cntlid", c.cntlid,
		"ioqueues", len(c.queues), "maxTransfer", c.maxTransfer, "inCapsule", c.inCapsule)
	return c, nil
}

// Discover connects to the discovery controller at addr (over
// Options.Transport or the address's "tcp://" / "rdma://" prefix; NVMe/TCP
// discovery controllers listen on DefaultTCPDiscoveryPort), reads the
// whole discovery log page and disconnects.
func Discover(ctx context.Context, addr string, opts Options) ([]nvme.DiscoveryLogEntry, error) {
	tr, addr, err := checkTransport(addr, &opts)
	if err != nil {
		return nil, err
	}
	if err := checkAuthOptions(&opts); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	opts.KeepAlive = 0 // a short-lived discovery association needs none
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	c := newController(addr, nvme.DiscoveryNQN, opts)
	c.tr = tr
	if err := c.bringUp(ctx, true); err != nil {
		c.abort()
		return nil, err
	}
	entries, err := c.readDiscoveryLog(ctx)
	if cerr := c.Close(); err == nil && cerr != nil {
		c.log.Warn("discovery controller shutdown", "err", cerr)
	}
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// checkTransport resolves the transport of addr (its "tcp://" or
// "rdma://" prefix, else opts.Transport) and checks what it needs.
func checkTransport(addr string, opts *Options) (Transport, string, error) {
	tr, addr, err := splitAddr(addr, opts.Transport)
	if err != nil {
		return "", "", err
	}
	switch tr {
	case TransportRDMA:
		if opts.Provider == nil {
			return "", "", fmt.Errorf("%w: Options.Provider is nil", ErrInvalid)
		}
	case TransportTCP:
		if opts.NetNS != "" {
			return "", "", fmt.Errorf("%w: Options.NetNS over NVMe/TCP", ErrNotSupported)
		}
	}
	return tr, addr, nil
}

// abort releases a controller whose bring-up failed.
func (c *Controller) abort() {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	c.closed = true
	c.markClosed()
	c.teardown()
}

// bringUp performs the connect sequence. discovery limits it to the admin
// queue of a discovery controller.
func (c *Controller) bringUp(ctx context.Context, discovery bool) error {
	o := &c.opts
	aq, err := c.dial(ctx, 0, AdminQueueDepth, 0, false)
	if err != nil {
		return err
	}
	admin, err := newAdminQueue(c, aq, c.pd, c.maxMR)
	if err != nil {
		_ = aq.destroy()
		return err
	}
	c.admin = admin
	c.track(aq)
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		admin.run()
	}()

	kato := o.katoMillis()
	if err := c.connectAdmin(ctx, kato); err != nil {
		return err
	}
	// Registers and enable (NVMe base spec §3.5.1 initialisation).
	capv, err := admin.propertyGet(ctx, nvme.PropCAP, true)
	if err != nil {
		return err
	}
	c.cap = capv
	vs, err := admin.propertyGet(ctx, nvme.PropVS, false)
	if err != nil {
		return err
	}
	c.vs = uint32(vs)
	if err := c.enable(ctx); err != nil {
		return err
	}
	// Keep alive from here: a controller takes commands other than
	// Fabrics ones only once enabled (Linux nvmet fails Get Features and
	// Keep Alive before CC.EN, and starts its keep-alive timer at CC.EN).
	if kato > 0 {
		// The controller may have clamped KATO (Connect accepts any
		// value); keep alive at the timeout it actually runs, if shorter.
		if v, err := admin.getFeatures(ctx, nvme.FeatKeepAliveTimer, 0); err == nil && v > 0 && v < kato {
			c.log.Info("controller shortened KATO", "asked_ms", kato, "kato_ms", v)
			kato = v
		} else if err != nil && ctx.Err() != nil {
			return err
		}
		c.bg.Add(1)
		go c.keepAliveLoop(time.Duration(kato) * time.Millisecond)
	}

	raw, err := admin.identify(ctx, nvme.CNSController, 0)
	if err != nil {
		return err
	}
	if c.ident, err = nvme.ParseIdentifyController(raw); err != nil {
		return fmt.Errorf("%w: identify controller: %w", ErrProtocol, err)
	}
	if c.tr == TransportRDMA && c.ident.SGLS&nvme.SGLSKeyed == 0 {
		return fmt.Errorf("%w: controller does not support keyed SGL data blocks (SGLS %#x)", ErrNotSupported, c.ident.SGLS)
	}
	c.maxTransfer = c.computeMaxTransfer()
	isDisc := c.ident.CNTRLTYPE == nvme.CntrlTypeDiscovery
	if discovery {
		if c.ident.CNTRLTYPE != 0 && !isDisc {
			return fmt.Errorf("%w: %s is not a discovery controller (CNTRLTYPE %d)", ErrNotSupported, c.subNQN, c.ident.CNTRLTYPE)
		}
		return nil
	}
	if isDisc {
		return fmt.Errorf("%w: %s is a discovery controller; use Discover", ErrNotSupported, c.subNQN)
	}
	if err := c.setupEvents(ctx); err != nil {
		return err
	}
	if err := c.setupIOQueues(ctx); err != nil {
		return err
	}
	return c.scanNamespaces(ctx)
}

// dial connects queue qid over the controller's transport. The admin
// queue (qid 0) of an RDMA controller allocates the controller's PD and
// records the device limits (c.pd, c.maxMR, c.maxSGE); inCapsule asks an
// RDMA QP for the second send SGE that in-capsule data needs.
func (c *Controller) dial(ctx context.Context, qid uint16, depth, vector int, inCapsule bool) (*qpair, error) {
	o := &c.opts
	if c.tr == TransportTCP {
		s := tcpSetup{addr: c.addr, qid: qid, depth: depth,
			digests: tcppdu.Digests{Header: o.HeaderDigest, Data: o.DataDigest}, inCapsule: c.inCapsule, maxData: c.maxTransfer,
			zcMin: o.ZeroCopySendMin}
		if qid == 0 {
			// Before Identify: admin data is at most adminBufSize.
			s.inCapsule, s.maxData, s.zcMin = tcpAdminInCapsule, adminBufSize, 0
		}
		return dialTCP(ctx, s)
	}
	s := queueSetup{provider: o.Provider, addr: c.addr, qid: qid, depth: depth, sendSGE: 1,
		vector: vector, cntlid: c.cntlid, pd: c.pd}
	if qid == 0 {
		s.cntlid = nvme.DynamicCNTLID
	}
	if inCapsule {
		s.sendSGE, s.inCapsule = 2, c.inCapsule
	}
	q, pd, err := dialQueue(ctx, s)
	if qid == 0 {
		c.pd = pd
		if err == nil {
			attr := q.w.(*rdmaWire).id.Device().Attr()
			c.maxMR, c.maxSGE = attr.MaxMRSize, attr.MaxSGE
		}
	}
	return q, err
}

// connectAdmin sends the fabrics Connect of the admin queue (dynamic
// controller), records the CNTLID and authenticates the queue if the
// controller requires it — before anything else on the admin queue: the
// controller refuses other commands until then.
func (c *Controller) connectAdmin(ctx context.Context, kato uint32) error {
	o := &c.opts
	cd := nvme.ConnectData{HostID: o.HostID, CNTLID: nvme.DynamicCNTLID, SubNQN: c.subNQN, HostNQN: o.HostNQN}
	dw0, err := c.admin.fabricsConnect(ctx, uint16(len(c.admin.q.slots)-1), kato, &cd)
	if err != nil {
		var ce *ConnectError
		if errors.As(err, &ce) {
			ce.Addr = c.addr
		}
		return err
	}
	c.cntlid = uint16(dw0)
	return c.authenticate(ctx, 0, adminAuth{c.admin}, dw0)
}

// enable writes CC (EN, IOSQES 6, IOCQES 4, NVM command set, 4 KiB pages)
// and waits for CSTS.RDY within CAP.TO.
func (c *Controller) enable(ctx context.Context) error {
	cc := uint32(nvme.CCEN | 6<<nvme.CCIOSQESShift | 4<<nvme.CCIOCQESShift)
	if err := c.admin.propertySet(ctx, nvme.PropCC, cc); err != nil {
		return err
	}
	c.cc = cc
	to := time.Duration((c.cap>>nvme.CAPTOShift)&0xFF) * 500 * time.Millisecond
	if to < 500*time.Millisecond {
		to = 500 * time.Millisecond
	}
	rctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	err := c.pollCSTS(rctx, func(csts uint32) bool { return csts&nvme.CSTSRDY != 0 })
	if err != nil && ctx.Err() == nil && errors.Is(err, ErrTimeout) {
		return fmt.Errorf("initiator: controller not ready within CAP.TO (%v): %w", to, err)
	}
	return err
}

// computeMaxTransfer derives the per-command transfer limit from MDTS
// (units of the minimum memory page size, CAP.MPSMIN) and the buffer size
// cap, as a multiple of 4 KiB.
func (c *Controller) computeMaxTransfer() int {
	mt := DefaultMaxTransfer
	if m := c.ident.MDTS; m != 0 {
		page := 4096 << ((c.cap >> nvme.CAPMPSMINShift) & 0xF)
		if m < 30 && page<<m < mt {
			mt = page << m
		}
	}
	if mt > nvme.MaxKeyedSGLLength {
		mt = nvme.MaxKeyedSGLLength
	}
	return mt &^ 4095
}

// setupEvents enables namespace attribute and ANA change notices (when
// supported) and starts the Asynchronous Event Request loop.
func (c *Controller) setupEvents(ctx context.Context) error {
	var aec uint32
	if c.ident.OAES&nvme.OAESNSAttr != 0 {
		aec |= nvme.AECNSAttr
	}
	if c.ident.OAES&nvme.OAESANAChange != 0 && c.ident.CMIC&nvme.CMICANA != 0 {
		aec |= nvme.AECANAChange
	}
	if aec == 0 {
		return nil
	}
	if _, err := c.admin.setFeatures(ctx, nvme.FeatAsyncEventConfig, aec); err != nil {
		// Not fatal: the host just misses notices.
		c.log.Warn("set async event configuration", "err", err)
		var se *StatusError
		if !errors.As(err, &se) {
			return err
		}
		return nil
	}
	c.bg.Add(1)
	go c.aerLoop()
	return nil
}

// setupIOQueues negotiates the number of I/O queues and connects them.
func (c *Controller) setupIOQueues(ctx context.Context) error {
	o := &c.opts
	want := min(o.IOQueues, 0xFFFF)
	res, err := c.admin.setFeatures(ctx, nvme.FeatNumQueues, nvme.NumQueuesValue(uint16(want), uint16(want)))
	if err != nil {
		return err
	}
	nsq, ncq := nvme.ParseNumQueues(res)
	n := min(want, int(nsq), int(ncq))
	if n < 1 {
		return fmt.Errorf("%w: controller grants no I/O queues", ErrNotSupported)
	}
	depth := min(o.QueueDepth, int(c.cap&nvme.CAPMQESMask)+1)
	if c.ident.MAXCMD > 0 {
		depth = min(depth, int(c.ident.MAXCMD))
	}
	inCapsule := 0
	switch c.tr {
	case TransportTCP:
		// NVMe/TCP controllers take in-capsule data (TCP §3.3): as
		// much as IOCCSZ says, at ICDOFF 0.
		if c.ident.IOCCSZ > 4 && c.ident.ICDOFF == 0 {
			inCapsule = min(int(c.ident.IOCCSZ)*16-nvme.SQESize, c.maxTransfer)
		}
	default:
		if c.ident.SGLS&nvme.SGLSOffset != 0 && c.ident.IOCCSZ > 4 && c.ident.ICDOFF == 0 && c.maxSGE >= 2 {
			inCapsule = min(int(c.ident.IOCCSZ)*16-nvme.SQESize, c.maxTransfer)
		}
	}
	c.inCapsule = inCapsule
	cd := nvme.ConnectData{HostID: o.HostID, CNTLID: c.cntlid, SubNQN: c.subNQN, HostNQN: o.HostNQN}
	for i := 0; i < n; i++ {
		qid := uint16(i + 1)
		qp, err := c.dial(ctx, qid, depth, i, inCapsule > 0)
		if err != nil {
			return err
		}
		ioq, err := newIOQueue(c, i, qp, c.maxTransfer, inCapsule, c.maxMR)
		if err != nil {
			_ = qp.destroy()
			return err
		}
		c.queues = append(c.queues, ioq)
		c.track(qp)
		if err := ioq.connect(ctx, &cd); err != nil {
			return err
		}
	}
	return nil
}

// scanNamespaces reads the active namespace list and identifies each
// namespace, replacing the controller's namespace table. Namespace
// objects of NSIDs that stay active are kept (their data refreshed).
func (c *Controller) scanNamespaces(ctx context.Context) error {
	c.nsMu.Lock()
	defer c.nsMu.Unlock()
	var ids []uint32
	for start := uint32(0); ; {
		raw, err := c.admin.identify(ctx, nvme.CNSActiveNSList, start)
		if err != nil {
			return err
		}
		list := nvme.ParseNSList(raw)
		ids = append(ids, list...)
		if len(list) < nvme.IdentifySize/4 {
			break
		}
		start = list[len(list)-1]
	}
	old := c.nsByID.Load().All()
	next := make(map[uint32]*Namespace, len(ids))
	for _, id := range ids {
		raw, err := c.admin.identify(ctx, nvme.CNSNamespace, id)
		if err != nil {
			var se *StatusError
			if errors.As(err, &se) {
				c.log.Warn("identify namespace", "nsid", id, "err", err)
				continue
			}
			return err
		}
		info, err := nvme.ParseIdentifyNamespace(raw)
		if err != nil {
			return fmt.Errorf("%w: identify namespace %d: %w", ErrProtocol, id, err)
		}
		if info.NSZE == 0 || info.BlockSize() == 0 {
			c.log.Warn("skipping unusable namespace", "nsid", id, "nsze", info.NSZE, "blockSize", info.BlockSize())
			continue
		}
		ns := old[id]
		if ns == nil {
			ns = &Namespace{c: c, nsid: id}
		}
		ns.info.Store(&info)
		next[id] = ns
	}
	c.nsByID.Store(idmap.New(next))
	return nil
}

// readDiscoveryLog reads the discovery log page: the header first, then
// the whole page, retrying while the generation counter changes.
func (c *Controller) readDiscoveryLog(ctx context.Context) ([]nvme.DiscoveryLogEntry, error) {
	for attempt := 0; attempt < 5; attempt++ {
		hdr, err := c.admin.getLogPage(ctx, nvme.LogDiscovery, 0, nvme.DiscoveryLogSize(0), 0, c.maxTransfer)
		if err != nil {
			return nil, err
		}
		h, _, err := nvme.ParseDiscoveryLog(hdr)
		if err != nil {
			return nil, fmt.Errorf("%w: discovery log header: %w", ErrProtocol, err)
		}
		if h.NumRec > 1<<16 {
			return nil, fmt.Errorf("%w: discovery log claims %d records", ErrProtocol, h.NumRec)
		}
		full, err := c.admin.getLogPage(ctx, nvme.LogDiscovery, 0, nvme.DiscoveryLogSize(int(h.NumRec)), 0, c.maxTransfer)
		if err != nil {
			return nil, err
		}
		h2, entries, err := nvme.ParseDiscoveryLog(full)
		if err != nil {
			return nil, fmt.Errorf("%w: discovery log: %w", ErrProtocol, err)
		}
		if h2.GenCtr == h.GenCtr {
			return entries, nil
		}
	}
	return nil, fmt.Errorf("%w: discovery log kept changing", ErrProtocol)
}
