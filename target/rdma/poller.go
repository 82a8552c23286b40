package rdma

import (
	"errors"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/verbs"
)

// flushTimeout bounds the wait for flushed work requests during teardown
// before the QP is destroyed outright (safety net against a provider that
// never flushes).
const flushTimeout = 10 * time.Second

// connectTimedOut ends a queue whose host did not bring a successful
// Fabrics Connect within Config.ConnectTimeout.
func (q *queue) connectTimedOut() {
	if q.connected {
		return
	}
	q.l.stats.connectTimeouts.Add(1)
	q.l.noteRefusal("queue without a Fabrics Connect disconnected", q.src)
	q.fatal("no Fabrics Connect within the connect timeout", nil)
}

// step polls the CQ once, takes every pending async completion, advances
// waiting requests and posts the batched work requests. It reports whether
// anything happened.
func (q *queue) step() bool {
	if q.batch != nil {
		// Backend I/O started by this step's commands goes to the device
		// together at the end of the step.
		q.batch.BeginBatch()
		defer q.batch.EndBatch()
	}
	var n int
	var err error
	if q.stillClean() {
		if q.outstanding > 0 && q.g.afterArm && !q.clean.sarm.Armed() {
			// Reap the sends' completions before the group sleeps, as an
			// unclean queue's last pass would (clean.go).
			n, err = q.pollCQ(q.scq)
		} else {
			q.g.cleanSkips.Add(1)
		}
	} else {
		n, err = q.pollCQs()
		q.notePoll(n)
	}
	if err != nil {
		q.fatal("polling the CQ", err)
		return true
	}
	worked := n > 0
	for more := true; more; {
		select {
		case t := <-q.compCh:
			q.onComplete(t)
			worked = true
		default:
			more = false
		}
	}
	if !q.dying {
		if q.progress() {
			worked = true
		}
		q.flush()
	}
	return worked
}

// pollCQs polls the send CQ, then the receive CQ (send completions free
// the slots and credits new commands need), handles what it found and
// returns how many completions that was.
func (q *queue) pollCQs() (int, error) {
	n, err := q.pollCQ(q.scq)
	if err != nil {
		return n, err
	}
	m, err := q.pollCQ(q.cq)
	return n + m, err
}

// pollCQ polls cq once and handles what it found.
func (q *queue) pollCQ(cq verbs.CompletionQueue) (int, error) {
	n, err := cq.Poll(q.wc)
	for i := range n {
		q.handleWC(&q.wc[i])
	}
	return n, err
}

// arm requests completion events before the poll group sleeps: always on
// the receive CQ; on the send CQ only while something waits for a send
// completion (needSendEvents). Unarmed, a response SEND's completion is
// reaped by the pass the queue's next command causes.
func (q *queue) arm() error {
	if q.stillClean() {
		return nil // its arms hold (clean.go)
	}
	if err := q.cq.ReqNotify(); err != nil {
		return err
	}
	if q.needSendEvents() {
		return q.scq.ReqNotify()
	}
	return nil
}

// needSendEvents reports whether progress depends on a send completion:
// an RDMA READ in flight (its completion lets the command run), a request
// waiting for a slot, credits or a buffer that completions free, or a
// drain (it ends when every slot is free).
func (q *queue) needSendEvents() bool {
	return q.readCredits < q.params.ord || !q.sendWait.empty() || !q.readWait.empty() ||
		!q.bufWait.empty() || q.backlogLen > 0 || q.draining || q.dying
}

// handleWC dispatches one work completion.
func (q *queue) handleWC(wc *verbs.WorkCompletion) {
	kind, idx := splitWRID(wc.ID)
	if idx < 0 || (kind == wrRecv && int(idx) >= q.params.depth) || (kind != wrRecv && int(idx) >= len(q.slots)) {
		q.log.Error("rdma: completion with unknown work request ID", "id", wc.ID)
		return
	}
	switch kind {
	case wrRecv:
		q.postedRecvs--
		if wc.Status != verbs.WCSuccess {
			q.wcError("RECV", wc)
			return
		}
		if q.dying {
			return
		}
		q.onRecv(idx, int(wc.ByteLen))
	case wrRead:
		q.outstanding--
		q.readCredits++
		q.sendCredits++
		r := &q.slots[idx]
		if r.state != StateReadingFromHost {
			q.log.Error("rdma: READ completion for a request not reading", "state", r.state)
			return
		}
		if wc.Status != verbs.WCSuccess {
			q.wcError("RDMA READ", wc)
			q.releaseSlot(r) // the READ is over: its buffer may be reused
			return
		}
		if q.dying {
			q.releaseSlot(r)
			return
		}
		q.execute(r)
	case wrWrite:
		// WRITEs are unsignaled: a completion means it failed (or was
		// flushed); its send-queue slot is returned with the SEND's.
		if wc.Status != verbs.WCSuccess {
			q.wcError("RDMA WRITE", wc)
		}
	case wrSend:
		q.outstanding--
		r := &q.slots[idx]
		if r.state != StateCompleting {
			q.log.Error("rdma: SEND completion for a request not completing", "state", r.state)
			return
		}
		q.sendCredits += r.sendCredits
		r.sendCredits = 0
		if wc.Status != verbs.WCSuccess {
			q.wcError("SEND", wc)
		}
		q.releaseSlot(r)
	default:
		q.log.Error("rdma: completion with unknown work request ID", "id", wc.ID)
	}
}

// wcError handles a failed work completion: flushes are expected once the
// QP is in error; anything else kills the queue (an RC QP in error cannot
// recover, e.g. a remote access error from a bad rkey).
func (q *queue) wcError(op string, wc *verbs.WorkCompletion) {
	if wc.Status == verbs.WCWRFlushErr {
		if !q.dying {
			q.fatal("work requests flushed", nil)
		}
		return
	}
	q.fatal(op+" failed", errors.New(wc.Status.String()))
}

// startDrain begins a graceful drain (Listener.Close): commands that hold
// a slot finish normally and their CQEs go out; capsules that found no slot
// yet (the backlog) and every capsule arriving from now on are dropped,
// neither executed nor answered. Once the slots are free the queue
// disconnects, and the host's error recovery cancels the dropped commands
// with its own path-related status and retries them on a path that works
// (as after a crash, or kernel nvmet's teardown). Answering them instead
// with Command Aborted due to SQ Deletion (SCT 0, SC 08h) would fail the
// I/O on a multipath Linux host: only path-related statuses (SCT 3h, see
// nvme_is_path_error) are failed over (issue 10 item 8).
func (q *queue) startDrain() {
	q.draining = true
	for q.backlogLen > 0 {
		q.backlogHead = (q.backlogHead + 1) % len(q.backlog)
		q.backlogLen--
		q.dropCapsule()
	}
	if h := q.l.hooks; h != nil && h.draining != nil {
		h.draining(q.params.qid)
	}
}

// dropCapsule accounts a capsule received during a drain and left
// unanswered. Its receive buffer is not reposted: the queue ends soon, and
// a host that keeps sending only waits (RNR) until the disconnect.
func (q *queue) dropCapsule() {
	q.st.drainDropped.Add(1)
	if h := q.l.hooks; h != nil && h.dropped != nil {
		h.dropped()
	}
}

// onRecv starts the command received into receive buffer ri (n bytes).
func (q *queue) onRecv(ri int32, n int) {
	if q.draining {
		q.dropCapsule()
		return
	}
	if len(q.freeSlots) == 0 || q.backlogLen > 0 {
		// Every slot is busy (CQE SENDs not yet completed); keep the
		// command in arrival order until a slot frees up.
		i := (q.backlogHead + q.backlogLen) % len(q.backlog)
		q.backlog[i] = backlogEntry{recv: ri, n: n}
		q.backlogLen++
		return
	}
	q.startCommand(q.allocSlot(), ri, n)
}

func (q *queue) allocSlot() *request {
	i := q.freeSlots[len(q.freeSlots)-1]
	q.freeSlots = q.freeSlots[:len(q.freeSlots)-1]
	q.active++
	return &q.slots[i]
}

// startCommand parses the capsule in receive buffer ri into slot r and
// moves it to its first waiting state (state New).
func (q *queue) startCommand(r *request, ri int32, n int) {
	st := &q.st
	st.commands.Add(1)
	r.state = StateNew
	r.recv = ri
	if n < nvme.SQESize {
		cid, ok := shortCapsuleCID(q.sqeBuf(ri)[:n])
		if !ok {
			// nvmet: "capsule size less than 64 bytes" is fatal. Without a
			// CID there is no command to answer.
			q.fatal("capsule shorter than 4 bytes", errShortCapsule)
			q.releaseSlot(r)
			return
		}
		r.req.SQE = nvme.SQE{}
		r.req.SQE.SetCID(cid)
		q.repostHeld(r)
		q.fail(r, nvme.StatusInvalidField.WithDNR(), 0)
		return
	}
	r.req.SQE = nvme.SQE(q.sqeBuf(ri))
	status := q.parseSGL(r, q.icdBuf(ri)[:min(n-nvme.SQESize, q.params.icd)])
	if r.req.Data == nil {
		// No in-capsule data: the capsule's bytes are no longer needed.
		q.repostHeld(r)
	} else {
		st.inCapsuleBytes.Add(uint64(r.req.Length))
	}
	if !status.OK() {
		q.fail(r, status, 0)
		return
	}
	if s, dw0 := q.checkConnectQID(r); !s.OK() {
		q.fail(r, s, dw0)
		return
	}
	if q.params.qid == 0 && !r.req.SQE.IsFabrics() && r.req.SQE.Opcode() == nvme.AdminAsyncEvent {
		r.aer = true
	}
	if r.keyed {
		if !q.connected && r.length > bootSize {
			// Before Connect only the bootstrap buffer exists: no
			// fabrics command carries more than its 1,024 bytes of
			// Connect data.
			q.fail(r, nvme.StatusDataSGLLengthInvalid.WithDNR(), 0)
			return
		}
		q.needBuffer(r)
		return
	}
	q.execute(r)
}

// repostHeld reposts the receive buffer r still holds.
func (q *queue) repostHeld(r *request) {
	if r.recv >= 0 {
		if !q.dying {
			q.repostRecv(r.recv)
		}
		r.recv = -1
	}
}

// fail completes r with a transport-detected status (the core never sees
// the command). SQID is the negotiated qid; the capsule was consumed, so
// the core's SQ head advances (Queue.Consume) and the CQE carries the new
// SQHD, exactly as if the core had answered.
func (q *queue) fail(r *request, s nvme.Status, dw0 uint32) {
	q.st.commandErrors.Add(1)
	r.req.CQE.Reset()
	r.req.CQE.SetDW0(dw0)
	r.req.CQE.SetCID(r.req.SQE.CID())
	r.req.CQE.SetSQID(q.params.qid)
	r.req.CQE.SetSQHD(q.core.Consume())
	r.req.CQE.SetStatus(s)
	q.toCompletion(r)
}

// needBuffer: StateNeedBuffer, waiting for a data buffer. A queue with
// none free registers its next chunk when it may (grow); otherwise the
// command waits for a buffer to come back.
func (q *queue) needBuffer(r *request) {
	r.state = StateNeedBuffer
	if q.bufWait.empty() && q.haveBuffer(r.length) {
		q.gotBuffer(r)
		return
	}
	q.bufWait.push(q, r)
}

// haveBuffer reports a free data buffer for n bytes, growing a pool if
// none is free and the queue may register more: for a small command a
// small buffer (grown), else a free large one (not grown for it); for a
// large command a large one.
func (q *queue) haveBuffer(n uint32) bool {
	if q.smallSize > 0 && int(n) <= q.smallSize && q.connected {
		if len(q.freeSmall) > 0 {
			return true
		}
		if err := q.growSmall(false); err != nil && !errors.Is(err, errNoGrowth) {
			q.log.Warn("rdma: cannot register more small data buffers; using those registered", "err", err)
		}
		return len(q.freeSmall) > 0 || len(q.freeBufs) > 0
	}
	if len(q.freeBufs) > 0 {
		return true
	}
	if !q.connected {
		return false
	}
	if err := q.grow(false); err != nil && !errors.Is(err, errNoGrowth) {
		q.log.Warn("rdma: cannot register more data buffers; using those registered", "err", err)
	}
	return len(q.freeBufs) > 0
}

// gotBuffer takes a free data buffer for r and moves on.
func (q *queue) gotBuffer(r *request) {
	var b int32
	if q.smallSize > 0 && int(r.length) <= q.smallSize && len(q.freeSmall) > 0 {
		b = q.freeSmall[len(q.freeSmall)-1]
		q.freeSmall = q.freeSmall[:len(q.freeSmall)-1]
	} else {
		b = q.freeBufs[len(q.freeBufs)-1]
		q.freeBufs = q.freeBufs[:len(q.freeBufs)-1]
	}
	r.buf = b
	r.req.Data = q.dataBuf(b)[:r.length:r.length]
	r.req.Length = r.length
	if r.req.Dir == nvme.DirHostToCtrl {
		r.state = StateReadFromHostPending
		if q.readWait.empty() && q.readCredits > 0 && q.sendCredits > 0 {
			q.postRead(r)
			return
		}
		q.readWait.push(q, r)
		return
	}
	q.execute(r)
}

// postRead queues the RDMA READ of the host's data (StateReadingFromHost).
// The caller checked the READ and send credits.
func (q *queue) postRead(r *request) {
	r.state = StateReadingFromHost
	q.readCredits--
	q.sendCredits--
	r.sge[0] = q.dataSGE(r.buf, r.length)
	q.sendBatch[q.nSend] = verbs.SendWR{
		ID:         wrID(wrRead, r.idx),
		Opcode:     verbs.OpRDMARead,
		Flags:      verbs.SendSignaled,
		SGL:        r.sge[0:1],
		RemoteAddr: r.raddr,
		RKey:       r.rkey,
	}
	q.nSend++
	q.st.rdmaReads.Add(1)
	q.st.bytesFromHost.Add(uint64(r.length))
	if h := q.l.hooks; h != nil {
		if h.readPosted != nil {
			h.readPosted(q.params.ord - q.readCredits)
		}
		if h.dataPosted != nil {
			h.dataPosted(verbs.OpRDMARead, r.sge[0].Addr, r.sge[0].Length)
		}
	}
}

// execute hands r to the core (StateExecuting).
func (q *queue) execute(r *request) {
	r.req.CQE.Reset()
	r.state = StateExecuting
	q.executing++
	if r.aer {
		q.heldAER++
	}
	if q.core.Execute(&r.req) {
		q.onExecuted(r)
	}
}

// onComplete handles QueueConn.Complete for slot t.
func (q *queue) onComplete(t int32) {
	if t < 0 || int(t) >= len(q.slots) || q.slots[t].state != StateExecuting {
		q.log.Error("rdma: completion for a request that is not executing", "tag", t)
		return
	}
	q.onExecuted(&q.slots[t])
}

// onExecuted: the core is done with r; its CQE is final.
func (q *queue) onExecuted(r *request) {
	q.executing--
	if r.aer {
		q.heldAER--
		r.aer = false
	}
	if q.dying {
		q.releaseSlot(r)
		return
	}
	if !q.connected && r.req.CQE.Status().OK() && isConnect(&r.req.SQE) {
		q.onConnected()
		if q.dying {
			q.releaseSlot(r)
			return
		}
	}
	if r.req.Dir == nvme.DirHostToCtrl && r.buf >= 0 {
		q.freeBuf(r)
	}
	q.toCompletion(r)
}

// completionNeed is the number of send-queue slots r's completion takes:
// the CQE SEND, plus an RDMA WRITE when data goes to the host.
func (q *queue) completionNeed(r *request) int {
	if r.state == StateWriteToHostPending {
		return 2
	}
	return 1
}

// toCompletion moves an executed request to WriteToHostPending (data for
// the host) or CompletePending, and posts it when send-queue slots allow.
func (q *queue) toCompletion(r *request) {
	if r.req.Dir == nvme.DirCtrlToHost && r.keyed && r.buf >= 0 &&
		r.req.CQE.Status().OK() && min(r.req.Length, r.length) > 0 {
		r.state = StateWriteToHostPending
	} else {
		if r.buf >= 0 {
			q.freeBuf(r)
		}
		r.state = StateCompletePending
	}
	if q.sendWait.empty() && q.sendCredits >= q.completionNeed(r) {
		q.postCompletion(r)
		return
	}
	q.sendWait.push(q, r)
}

// postCompletion queues the RDMA WRITE (if any) and the CQE SEND of r in
// the send batch, after queueing the repost of its receive buffer (so the
// receive is posted before the host can see the CQE). The caller checked
// the send credits.
func (q *queue) postCompletion(r *request) {
	if r.state == StateWriteToHostPending {
		n := min(r.req.Length, r.length)
		r.sge[0] = q.dataSGE(r.buf, n)
		q.sendBatch[q.nSend] = verbs.SendWR{
			ID:         wrID(wrWrite, r.idx),
			Opcode:     verbs.OpRDMAWrite,
			SGL:        r.sge[0:1],
			RemoteAddr: r.raddr,
			RKey:       r.rkey,
		}
		q.nSend++
		q.sendCredits--
		r.sendCredits++
		q.st.rdmaWrites.Add(1)
		q.st.bytesToHost.Add(uint64(n))
		if h := q.l.hooks; h != nil && h.dataPosted != nil {
			h.dataPosted(verbs.OpRDMAWrite, r.sge[0].Addr, n)
		}
	}
	r.state = StateCompleting
	q.repostHeld(r)
	copy(r.cqe, r.req.CQE[:])
	wr := verbs.SendWR{
		ID:     wrID(wrSend, r.idx),
		Opcode: verbs.OpSend,
		Flags:  verbs.SendSignaled,
		SGL:    r.sge[1:2],
	}
	if r.inv && q.sendInv {
		wr.Opcode = verbs.OpSendWithInv
		wr.InvalidateRKey = r.rkey
	}
	q.sendBatch[q.nSend] = wr
	q.nSend++
	q.sendCredits--
	r.sendCredits++
}

// onConnected: the host's Fabrics Connect succeeded. The queue stops
// counting against the unconnected caps and its data buffers are
// registered; if that fails the queue dies (the host reconnects).
func (q *queue) onConnected() {
	q.l.leaveUnconnected(q)
	if err := q.enableData(); err != nil {
		q.fatal("no data buffers", err)
	}
}

func isConnect(s *nvme.SQE) bool { return s.IsFabrics() && s.FCType() == nvme.FabricsConnect }

// freeBuf returns r's data buffer to the pool (the bootstrap buffer only
// while the queue is not connected).
func (q *queue) freeBuf(r *request) {
	if r.buf == q.bootIdx && q.connected {
		r.buf = -1
		r.req.Data = nil
		return
	}
	if q.smallSize > 0 && r.buf >= q.smallBase {
		q.freeSmall = append(q.freeSmall, r.buf)
	} else {
		q.freeBufs = append(q.freeBufs, r.buf)
	}
	r.buf = -1
	r.req.Data = nil
}

// releaseSlot returns r (and whatever it holds) to the free lists.
func (q *queue) releaseSlot(r *request) {
	if r.state == StateFree {
		return
	}
	if r.buf >= 0 {
		q.freeBuf(r)
	}
	q.repostHeld(r)
	r.reset()
	q.freeSlots = append(q.freeSlots, r.idx)
	q.active--
}

// progress advances waiting requests while their resources allow, oldest
// first: completions (they free everything else), then READs, then data
// buffers, then commands that found no slot.
func (q *queue) progress() bool {
	worked := false
	for moved := true; moved && !q.dying; {
		moved = false
		for !q.sendWait.empty() && q.sendCredits >= q.completionNeed(q.sendWait.peek(q)) {
			q.advance(q.sendWait.pop(q))
			moved = true
		}
		for !q.readWait.empty() && q.readCredits > 0 && q.sendCredits > 0 {
			q.advance(q.readWait.pop(q))
			moved = true
		}
		for !q.bufWait.empty() && !q.dying && q.haveBuffer(q.bufWait.peek(q).length) {
			q.advance(q.bufWait.pop(q))
			moved = true
		}
		for q.backlogLen > 0 && len(q.freeSlots) > 0 && !q.dying {
			e := q.backlog[q.backlogHead]
			q.backlogHead = (q.backlogHead + 1) % len(q.backlog)
			q.backlogLen--
			q.startCommand(q.allocSlot(), e.recv, e.n)
			moved = true
		}
		worked = worked || moved
	}
	return worked
}

// advance moves a request whose waiting state's resource became available
// (the caller checked it) to its next state: the state decides the
// transition.
func (q *queue) advance(r *request) {
	switch r.state {
	case StateNeedBuffer:
		q.gotBuffer(r)
	case StateReadFromHostPending:
		q.postRead(r)
	case StateWriteToHostPending, StateCompletePending:
		q.postCompletion(r)
	default:
		q.log.Error("rdma: request on a wait list in a state that does not wait", "state", r.state)
	}
}

// repostRecv queues receive buffer i for reposting.
func (q *queue) repostRecv(i int32) {
	q.recvBatch[q.nRecv] = verbs.RecvWR{ID: wrID(wrRecv, i), SGL: q.recvSGL(i)}
	q.nRecv++
}

// flush posts the batched receives, then the batched sends: a receive
// freed by a command is always posted before that command's CQE.
func (q *queue) flush() {
	if q.flushRecvs() {
		q.flushSends()
	}
}

func (q *queue) flushRecvs() bool {
	if q.nRecv == 0 {
		return true
	}
	n, err := q.qp.PostRecv(q.recvBatch[:q.nRecv])
	q.postedRecvs += n
	q.nRecv = 0
	if err != nil {
		q.nSend = 0
		q.fatal("posting receives", err)
		return false
	}
	return true
}

func (q *queue) flushSends() {
	if q.nSend == 0 {
		return
	}
	n, err := q.qp.PostSend(q.sendBatch[:q.nSend])
	for i := range n {
		if q.sendBatch[i].Flags&verbs.SendSignaled != 0 {
			q.outstanding++
		}
	}
	q.nSend = 0
	if err != nil {
		q.fatal("posting sends", err)
	}
}

// drained reports that a graceful drain is complete: every slot is free
// except AERs the core holds (they complete only when the queue is
// destroyed; the host's error recovery cancels them). The backlog was
// dropped when the drain began.
func (q *queue) drained() bool {
	return q.active-q.heldAER == 0
}

// fatal marks the queue dead: nothing more is posted, batched work is
// dropped, and the poller goes to teardown.
func (q *queue) fatal(reason string, err error) {
	if q.dying {
		return
	}
	q.dying = true
	q.nRecv, q.nSend = 0, 0
	if err != nil && !errors.Is(err, verbs.ErrDisconnected) && !errors.Is(err, verbs.ErrClosed) {
		q.st.queueErrors.Add(1)
		q.log.Warn("rdma: queue failed", "reason", reason, "err", err)
		return
	}
	q.log.Debug("rdma: queue ending", "reason", reason, "err", err)
}

// teardown disconnects, destroys the core queue, waits until every posted
// work request completed or was flushed and every request the core held
// came back, then releases the resources. Runs on the queue's teardown
// goroutine (finish), after the queue left its poll group.
//
// Queue.Destroy comes before the wait for executing requests, not after:
// the core holds Asynchronous Event Requests until an event or until the
// queue is destroyed, so waiting first could wait forever. The core
// guarantees Complete for every pending request after Destroy, and the
// memory those requests use is unmapped only after all of them came back.
func (q *queue) teardown() {
	q.dying = true
	q.nRecv, q.nSend = 0, 0
	if q.routed {
		// Teardown waits on the CQs' own channels, not the group's bell.
		q.cq.(verbs.NotifyRouter).RouteNotify(nil)
		q.scq.(verbs.NotifyRouter).RouteNotify(nil)
	}
	_ = q.id.Disconnect()
	q.destroyCore()
	timer := time.NewTimer(flushTimeout)
	defer timer.Stop()
	qpClosed, leak, cqBroken := false, false, false
	if !q.accepted {
		// Never established: destroying the QP flushes its receives.
		_ = q.qp.Close()
		qpClosed = true
	}
	for (!cqBroken && (q.postedRecvs > 0 || q.outstanding > 0)) || q.executing > 0 {
		if !cqBroken {
			n, err := q.pollCQs()
			if err != nil {
				// The CQ overflowed: flushes cannot be counted. Destroying
				// the QP stops the device from touching our memory.
				q.log.Error("rdma: CQ broken during teardown", "err", err)
				cqBroken = true
				if !qpClosed {
					_ = q.qp.Close()
					qpClosed = true
				}
			}
			if n > 0 {
				continue
			}
		}
		select {
		case t := <-q.compCh:
			q.onComplete(t)
			continue
		default:
		}
		var rnotify, snotify <-chan struct{}
		if !cqBroken && (q.postedRecvs > 0 || q.outstanding > 0) {
			if err := q.cq.ReqNotify(); err == nil {
				rnotify = q.cq.Notify()
			}
			if err := q.scq.ReqNotify(); err == nil {
				snotify = q.scq.Notify()
			}
			if n, _ := q.pollCQs(); n > 0 {
				continue
			}
		}
		select {
		case <-rnotify:
		case <-snotify:
		case t := <-q.compCh:
			q.onComplete(t)
		case <-timer.C:
			switch {
			case !qpClosed:
				q.log.Error("rdma: work requests not flushed; destroying the QP",
					"recvs", q.postedRecvs, "sends", q.outstanding)
				_ = q.qp.Close()
				qpClosed = true
			case q.postedRecvs > 0 || q.outstanding > 0:
				q.log.Error("rdma: work requests never flushed; leaking the queue memory")
				leak = true
				cqBroken = true // stop waiting for them
			default:
				q.log.Warn("rdma: still waiting for the core to complete requests", "executing", q.executing)
			}
			timer.Reset(flushTimeout)
		}
	}
	if qpClosed {
		q.qp = nil
	}
	q.release(leak)
	_ = q.id.Close()
	q.l.leaveUnconnected(q)
	q.l.removeQueue(q)
	close(q.done)
}
