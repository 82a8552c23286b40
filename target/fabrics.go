package target

import (
	"bytes"

	"github.com/rdmablk/rdmablk/nvme"
)

// Offsets reported in a Connect Invalid Parameters completion (NVMe-oF
// 1.1 §3.3, Figure 21: DW0 bits 15:0 IPO, bits 23:16 IATTR; IATTR bit 0
// set means IPO is an offset in the Connect data, clear means in the SQE).
const (
	connectSQEQIDOff      = 42
	connectSQESQSizeOff   = 44
	connectDataCNTLIDOff  = 16
	connectDataSubNQNOff  = 256
	connectDataHostNQNOff = 512
)

// maxAdminSQSize is the largest admin SQSIZE (0's based) a Connect may ask
// for: 32 entries, as the Linux host uses (NVME_AQ_DEPTH) and nvmet allows.
const maxAdminSQSize = 31

// connectIPO is the DW0 of a Connect Invalid Parameters / Invalid Host
// completion.
func connectIPO(inData bool, off uint16) uint32 {
	v := uint32(off)
	if inData {
		v |= 1 << 16
	}
	return v
}

// execFabrics dispatches a fabrics command (opcode 7Fh).
func (q *Queue) execFabrics(r *Request, c *Controller) bool {
	switch r.SQE.FCType() {
	case nvme.FabricsConnect:
		if c != nil {
			return q.completeInline(r, nvme.StatusCommandSequenceError.WithDNR())
		}
		return q.completeInline(r, q.connect(r))
	case nvme.FabricsAuthSend, nvme.FabricsAuthRecv:
		return q.execAuth(r, c)
	case nvme.FabricsPropertyGet, nvme.FabricsPropertySet:
		if c == nil {
			return q.completeInline(r, nvme.StatusCommandSequenceError)
		}
		if qa := q.auth; qa != nil && !qa.ok.Load() {
			return q.completeInline(r, statusAuthRequired)
		}
		if q.qid != 0 {
			return q.completeInline(r, nvme.StatusInvalidOpcode.WithDNR())
		}
		if r.Length != 0 {
			return q.completeInline(r, nvme.StatusDataSGLLengthInvalid.WithDNR())
		}
		if r.SQE.FCType() == nvme.FabricsPropertyGet {
			return q.completeInline(r, c.propertyGet(r))
		}
		return c.propertySet(q, r)
	default:
		return q.completeInline(r, nvme.StatusInvalidOpcode.WithDNR())
	}
}

// connect handles a Connect command on a queue that has no controller.
// On failure DW0 carries IPO/IATTR where the spec defines them.
func (q *Queue) connect(r *Request) nvme.Status {
	cmd := nvme.ConnectCmd{SQE: &r.SQE}
	if r.Dir != nvme.DirHostToCtrl || r.Length != nvme.ConnectDataSize || len(r.Data) < nvme.ConnectDataSize {
		return nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	if cmd.Recfmt() != 0 {
		return nvme.StatusConnectIncompatibleFmt.WithDNR()
	}
	data := r.Data[:nvme.ConnectDataSize]
	d, err := nvme.ParseConnectData(data)
	if err != nil {
		off := uint16(connectDataSubNQNOff)
		if bytes.IndexByte(data[connectDataSubNQNOff:connectDataSubNQNOff+nvme.NQNSize], 0) >= 0 {
			off = connectDataHostNQNOff
		}
		return q.connectFail(r, off)
	}
	if d.HostNQN == "" {
		return q.connectFail(r, connectDataHostNQNOff)
	}
	if cmd.QID() == 0 {
		return q.connectAdmin(r, cmd, &d)
	}
	return q.connectIO(r, cmd, &d)
}

// connectFail returns Connect Invalid Parameters for a Connect data field.
func (q *Queue) connectFail(r *Request, off uint16) nvme.Status {
	r.CQE.SetDW0(connectIPO(true, off))
	return nvme.StatusConnectInvalidParam.WithDNR()
}

// connectFailSQE returns Connect Invalid Parameters for an SQE field.
func (q *Queue) connectFailSQE(r *Request, off uint16) nvme.Status {
	r.CQE.SetDW0(connectIPO(false, off))
	return nvme.StatusConnectInvalidParam.WithDNR()
}

// connectAdmin creates a controller (dynamic model) with q as its admin
// queue.
func (q *Queue) connectAdmin(r *Request, cmd nvme.ConnectCmd, d *nvme.ConnectData) nvme.Status {
	if d.CNTLID != nvme.DynamicCNTLID {
		return q.connectFail(r, connectDataCNTLIDOff)
	}
	sqsize := cmd.SQSize()
	if sqsize == 0 || sqsize > maxAdminSQSize || uint32(sqsize) >= q.depth {
		return q.connectFailSQE(r, connectSQESQSizeOff)
	}
	s := q.t.lookupSubsystem(d.SubNQN)
	if s == nil {
		return q.connectFail(r, connectDataSubNQNOff)
	}
	if !s.allowed(d.HostNQN) {
		r.CQE.SetDW0(connectIPO(true, connectDataHostNQNOff))
		q.t.log.Warn("nvmet: connect from host not allowed", "subnqn", d.SubNQN, "hostnqn", d.HostNQN)
		return nvme.StatusConnectInvalidHost.WithDNR()
	}
	ha, required := s.authFor(d.HostNQN)
	if ha == nil && required {
		r.CQE.SetDW0(connectIPO(true, connectDataHostNQNOff))
		q.t.log.Warn("nvmet: connect refused: the subsystem requires DH-HMAC-CHAP and the host has no secret",
			"subnqn", d.SubNQN, "hostnqn", d.HostNQN)
		return nvme.StatusConnectInvalidHost.WithDNR()
	}
	c := newController(s, q, d, cmd.KATO(), ha)
	if c == nil {
		return nvme.StatusConnectControllerBusy.WithDNR()
	}
	dw0 := uint32(c.id)
	if ha != nil {
		if err := q.newQueueAuth(c, ha); err != nil {
			// Validated when configured: not reached.
			c.kill("authentication setup failed")
			return nvme.StatusInternalError
		}
		dw0 |= connectATR
	}
	q.bind(c, 0, sqsize)
	r.CQE.SetSQID(0)
	r.CQE.SetDW0(dw0)
	q.t.log.Info("nvmet: controller created", "subnqn", s.nqn, "cntlid", c.id, "hostnqn", c.hostNQN,
		"port", q.port.ID, "discovery", c.discovery, "kato_ms", cmd.KATO(), "dhchap", ha != nil)
	return nvme.StatusSuccess
}

// connectIO binds q as an I/O queue of an existing controller.
func (q *Queue) connectIO(r *Request, cmd nvme.ConnectCmd, d *nvme.ConnectData) nvme.Status {
	qid, sqsize := cmd.QID(), cmd.SQSize()
	if sqsize == 0 || uint32(sqsize) >= q.depth || uint32(sqsize) >= mqesPlus1(&q.port) {
		return q.connectFailSQE(r, connectSQESQSizeOff)
	}
	s := q.t.lookupSubsystem(d.SubNQN)
	if s == nil {
		return q.connectFail(r, connectDataSubNQNOff)
	}
	c := s.controller(d.CNTLID)
	if c == nil || c.hostNQN != d.HostNQN || c.hostID != d.HostID {
		return q.connectFail(r, connectDataCNTLIDOff)
	}
	// The host's own Connect is traffic of its controller (keep alive).
	c.touch()
	if !s.allowed(d.HostNQN) {
		r.CQE.SetDW0(connectIPO(true, connectDataHostNQNOff))
		return nvme.StatusConnectInvalidHost.WithDNR()
	}
	if c.hostAuth != nil && !c.authed.Load() {
		// No I/O queue for a controller whose host has not proven its
		// identity on the admin queue (auth.go).
		return statusAuthRequired
	}
	if st, dw0 := c.attachIO(q, qid); st != nvme.StatusSuccess {
		r.CQE.SetDW0(dw0)
		return st
	}
	dw0 := uint32(c.id)
	if c.hostAuth != nil {
		q.qid = qid // for the authentication timer's log line
		if err := q.newQueueAuth(c, c.hostAuth); err != nil {
			c.detach(q, qid)
			return nvme.StatusInternalError
		}
		dw0 |= connectATR
	}
	q.bind(c, qid, sqsize)
	r.CQE.SetSQID(qid)
	r.CQE.SetDW0(dw0)
	return nvme.StatusSuccess
}

// bind attaches q to c as queue qid of sqsize+1 entries.
func (q *Queue) bind(c *Controller, qid, sqsize uint16) {
	q.qid = qid
	q.size = uint32(sqsize) + 1
	q.head %= q.size
	q.cstats = &c.stats[q.shard]
	q.ctrl.Store(c)
}

// mqesPlus1 is the largest queue size (CAP.MQES + 1) on port p.
func mqesPlus1(p *Port) uint32 { return uint32(min(p.Caps.MaxQueueDepth, 65536)) }

// capValue is the CAP property of a controller on port p: MQES from the
// transport, contiguous queues required, TO 7.5 s (as nvmet), NVM command
// set, MPSMIN = MPSMAX = 4 KiB.
func capValue(p *Port) uint64 {
	return nvme.MakeCAP(uint16(mqesPlus1(p)-1), 15, 0, 0)
}

// propertyGet handles Property Get: CAP (8 or 4 bytes), VS, CC, CSTS.
func (c *Controller) propertyGet(r *Request) nvme.Status {
	p := nvme.PropertyCmd{SQE: &r.SQE}
	var v uint64
	switch p.Offset() {
	case nvme.PropCAP:
		v = capValue(&c.port)
		if !p.Size8() {
			v &= 0xFFFFFFFF
		}
	case nvme.PropVS:
		v = nvme.VS13
	case nvme.PropCC:
		c.mu.Lock()
		v = uint64(c.cc)
		c.mu.Unlock()
	case nvme.PropCSTS:
		c.mu.Lock()
		v = uint64(c.csts)
		c.mu.Unlock()
	default:
		return nvme.StatusInvalidField.WithDNR()
	}
	if p.Size8() && p.Offset() != nvme.PropCAP {
		return nvme.StatusInvalidField.WithDNR()
	}
	r.CQE.SetResult64(v)
	return nvme.StatusSuccess
}

// CC fields the controller checks when the host enables it.
const (
	ccMPSShift = 7
	ccMPSMask  = 0xF << ccMPSShift
	ccCSSShift = 4
	ccCSSMask  = 0x7 << ccCSSShift
	ccAMSShift = 11
	ccAMSMask  = 0x7 << ccAMSShift
	iosqes     = 6 // 64-byte SQE
	iocqes     = 4 // 16-byte CQE
)

// propertySet handles Property Set of CC (NSSR and everything else is
// Invalid Field). A new shutdown request flushes every namespace first
// ("shutdown means durable"), possibly on the worker pool.
func (c *Controller) propertySet(q *Queue, r *Request) bool {
	p := nvme.PropertyCmd{SQE: &r.SQE}
	if p.Size8() || p.Offset() != nvme.PropCC {
		return q.completeInline(r, nvme.StatusInvalidField.WithDNR())
	}
	v := uint32(p.Value())
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return q.completeInline(r, nvme.StatusCommandSequenceError)
	}
	old := c.cc
	c.cc = v
	enOld, enNew := old&nvme.CCEN != 0, v&nvme.CCEN != 0
	switch {
	case enNew && !enOld:
		if c.validCCLocked(v) {
			c.csts |= nvme.CSTSRDY
		} else {
			c.csts |= nvme.CSTSCFS
			c.t.log.Warn("nvmet: CC enable with unsupported settings", "cntlid", c.id, "cc", v)
		}
	case !enNew && enOld:
		// Controller reset: not ready; CFS clears with the reset.
		c.csts &^= nvme.CSTSRDY | nvme.CSTSCFS | nvme.CSTSSHSTMask
	}
	shnOld, shnNew := old&nvme.CCSHNMask, v&nvme.CCSHNMask
	shutdown := shnNew != 0 && shnOld == 0
	if shnNew == 0 && shnOld != 0 {
		c.csts &^= nvme.CSTSSHSTMask
	}
	if shutdown {
		c.csts = c.csts&^(nvme.CSTSSHSTMask|nvme.CSTSRDY) | nvme.CSTSSHSTOccuring
	}
	ready := c.csts&(nvme.CSTSRDY|nvme.CSTSCFS) == nvme.CSTSRDY
	if ready && !c.ready.Load() {
		// CSTS.RDY: the keep-alive timeout runs from here, with this
		// command as the last traffic.
		c.activity.Store(true)
		c.armKATOLocked()
	}
	c.ready.Store(ready)
	c.mu.Unlock()
	if !shutdown {
		return q.completeInline(r, nvme.StatusSuccess)
	}
	tbl := c.subsys.ns.Load()
	r.core.kind = kindShutdown
	r.core.ctrl = c
	r.core.tbl = tbl
	return q.runOrSubmit(r, tbl.allInline)
}

// validCCLocked checks the CC settings an enable must carry: 4 KiB pages,
// NVM command set, round robin arbitration and (I/O controllers) 64/16
// byte queue entries, as nvmet_start_ctrl does.
func (c *Controller) validCCLocked(v uint32) bool {
	if v&ccMPSMask != 0 || v&ccCSSMask != 0 || v&ccAMSMask != 0 {
		return false
	}
	if c.discovery {
		return true
	}
	return v>>nvme.CCIOSQESShift&0xF == iosqes && v>>nvme.CCIOCQESShift&0xF == iocqes
}

// shutdownDone completes a CC.SHN request after the flush: SHST complete,
// plus CFS when a flush failed (the host must not assume durability).
func (c *Controller) shutdownDone(flushErr error) {
	c.mu.Lock()
	c.csts = c.csts&^nvme.CSTSSHSTMask | nvme.CSTSSHSTComplete
	if flushErr != nil {
		c.csts |= nvme.CSTSCFS
	}
	c.ready.Store(false)
	c.mu.Unlock()
	if flushErr != nil {
		c.t.log.Error("nvmet: flush on shutdown failed", "subnqn", c.subsys.nqn, "cntlid", c.id, "err", flushErr)
	}
}
