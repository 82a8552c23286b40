package target

import (
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/nvme"
)

// Queue is the core side of one transport connection: a submission /
// completion queue pair. Create it with Target.NewQueue; the first command
// must be a fabrics Connect, which binds it to a controller as the admin
// queue (QID 0) or an I/O queue.
//
// Execute and Destroy are called only by the transport goroutine that owns
// the queue; QID is meant for that goroutine too. Controller and Port may
// be called from any goroutine.
type Queue struct {
	t     *Target
	port  Port
	conn  QueueConn
	depth uint32        // SQ entries negotiated by the transport
	shard uint32        // counter shard index
	stats *counterShard // the Target's shard for this queue
	ctrl  atomic.Pointer[Controller]

	// Owned by the transport goroutine.
	qid       uint16
	size      uint32 // SQ entries for the SQHD wrap: depth, then SQSIZE+1 once connected
	head      uint32 // SQ head after the last command (SQHD)
	destroyed bool
	cstats    *counterShard // the controller's shard once connected
	// batching is set between BeginBatch and EndBatch; plugged are the
	// asynchronous backends this queue plugged during the batch.
	batching bool
	plugged  [maxPlugged]blockdev.AsyncBatcher
	nPlugged int
	// pollers: the backends the last EndBatch released that can be
	// polled (blockdev.Poller): where that batch's I/O may still run.
	pollers  [maxPlugged]blockdev.Poller
	nPollers int
	// region is the transport's data memory (SetDataRegion); fixed are
	// the backends it is registered with (fixed.go).
	region []byte
	fixed  [maxFixed]fixedReg
	nFixed int
	// meterSeq counts metered commands, to time one in
	// meterSampleEvery (meter.go).
	meterSeq uint32
	// auth is the DH-HMAC-CHAP state when the queue's host must
	// authenticate (auth.go); set at Connect, nil otherwise.
	auth *queueAuth
}

// QID returns the queue ID given by the Connect command (0 before Connect
// and for the admin queue). Transport goroutine only.
func (q *Queue) QID() uint16 { return q.qid }

// Controller returns the controller the queue is connected to, nil before
// a successful Connect. Any goroutine.
func (q *Queue) Controller() *Controller { return q.ctrl.Load() }

// Port returns the port the queue was created on.
func (q *Queue) Port() Port { return q.port }

// statusRefused answers a command the target will not run because it is
// shutting down or tore the controller down (Target.Close,
// RemoveSubsystem, keep-alive expiry): Internal Path Error, a
// path-related status (SCT 3h) without DNR, so that a multipath host
// fails the I/O over to another path and a single-path host retries it
// after reconnecting (Linux nvme_decide_disposition: a path error is
// FAILOVER, not an I/O error). Commands already executing finish
// normally; Command Aborted due to SQ Deletion is kept for a queue the
// host itself took away.
const statusRefused = nvme.StatusInternalPathError

// cdw0FlagsRejected are the bits of SQE byte 1 (CDW0 bits 15:8) that make
// a command Invalid Field: FUSE (bits 9:8, NVMe base spec §4.2 Figure
// "Command Dword 0") and the reserved bits 13:10. PSDT (15:14) is the
// transport's to check.
const cdw0FlagsRejected = 0x3F

// Execute runs one command. The transport calls it from the queue's
// goroutine, in the order the commands arrived, with r.SQE, r.Dir,
// r.Length and r.Data filled (host-to-controller data already in Data).
//
// It returns done=true when r.CQE is final: the transport sends it (after
// moving controller-to-host data out of Data) and QueueConn.Complete will
// not be called for r. It returns done=false when the command continues
// elsewhere (blocking backend, held Asynchronous Event Request, shutdown
// flush): QueueConn.Complete(r) is then called exactly once, from any
// goroutine, possibly before Execute has returned and possibly after
// Destroy. From done=false until that Complete the transport must not
// touch r.
//
// Execute never fails: every error is an NVMe status in r.CQE. It does not
// allocate on the I/O path. It blocks only when it hands a command to the
// worker pool and the pool's buffer is full.
func (q *Queue) Execute(r *Request) (done bool) {
	r.CQE = nvme.CQE{}
	r.CQE.SetCID(r.SQE.CID())
	r.CQE.SetSQID(q.qid)
	r.CQE.SetSQHD(q.Consume())
	r.core = requestCore{state: stateExecuting, q: q}
	q.stats.cmds.Add(1)
	fabrics := r.SQE.IsFabrics()
	if q.qid == 0 || fabrics {
		q.stats.adminCmds.Add(1)
	}
	if q.destroyed {
		// The queue was deleted (its connection ended).
		return q.completeInline(r, nvme.StatusAbortSQDeleted)
	}
	if q.t.closed.Load() {
		return q.completeInline(r, statusRefused)
	}
	c := q.ctrl.Load()
	if c != nil {
		c.touch()
	}
	if r.SQE.Flags()&cdw0FlagsRejected != 0 {
		// Fused operations are not supported (Identify FUSES = 0): a
		// fused pair run as two plain commands would let the second half
		// act although the first failed. Reserved bits are not ignored
		// either. nvmet_req_init answers both the same way.
		return q.completeInline(r, nvme.StatusInvalidField.WithDNR())
	}
	if fabrics {
		return q.execFabrics(r, c)
	}
	if qa := q.auth; qa != nil && !qa.ok.Load() {
		// Nothing but Authentication Send/Receive before the queue
		// authenticated (auth.go); no command reaches a backend.
		return q.completeInline(r, statusAuthRequired)
	}
	if c != nil && c.gone.Load() {
		// Torn down by the target (subsystem removed, keep-alive
		// expiry): the host should go elsewhere, not give up. (Fabrics
		// commands still answer: Property Get shows CSTS.CFS.)
		return q.completeInline(r, statusRefused)
	}
	if c == nil || !c.ready.Load() {
		// Nothing but fabrics commands before Connect; nothing but
		// fabrics commands before CC.EN (nvmet_check_ctrl_status).
		return q.completeInline(r, nvme.StatusCommandSequenceError)
	}
	if q.qid == 0 {
		if c.discovery {
			return q.execDiscoveryAdmin(r, c)
		}
		return q.execAdmin(r, c)
	}
	return q.execIO(r, c)
}

// Consume advances the SQ head by one consumed submission queue entry and
// returns the new SQHD (NVMe base spec §4.2.1: the head moves for every
// entry the controller consumed, whatever its outcome). Execute calls it
// for every command it runs; the transport calls it for a capsule it
// answers itself without Execute (bad SGL, short capsule, Connect naming
// another queue), so the SQHD of every later CQE stays exact. Transport
// goroutine only, like Execute.
func (q *Queue) Consume() uint16 {
	q.head++
	if q.head >= q.size {
		q.head = 0
	}
	return uint16(q.head)
}

// Destroy ends the queue after the transport's connection ended. Transport
// goroutine; idempotent. Commands still in flight (backend workers, held
// AERs) still get QueueConn.Complete afterwards. Destroying the admin
// queue ends its controller: the controller's I/O queues are closed
// (QueueConn.Close) and its held AERs complete.
func (q *Queue) Destroy() {
	if q.destroyed {
		return
	}
	q.destroyed = true
	q.stopAuth()
	q.dropFixed()
	q.t.forgetQueue(q)
	if c := q.ctrl.Load(); c != nil {
		c.detach(q, q.qid)
	}
}

// finish makes r's CQE final with status st, releases the namespace
// reference and counts the outcome. Whoever owns r calls it once.
func (q *Queue) finish(r *Request, st nvme.Status) {
	rc := &r.core
	if rc.ns != nil {
		if rc.ns.meter != nil {
			q.meterDone(rc, st == nvme.StatusSuccess)
		}
		rc.ns.ref.leave()
	}
	if st == nvme.StatusSuccess {
		// Reads and writes only run on connected I/O queues, so
		// cstats (set at Connect, before any I/O) is non-nil.
		switch rc.kind {
		case kindRead:
			n := uint64(len(rc.vec[0]))
			q.stats.reads.Add(1)
			q.stats.readBytes.Add(n)
			q.cstats.reads.Add(1)
			q.cstats.readBytes.Add(n)
		case kindWrite:
			n := uint64(len(rc.vec[0]))
			q.stats.writes.Add(1)
			q.stats.writeBytes.Add(n)
			q.cstats.writes.Add(1)
			q.cstats.writeBytes.Add(n)
		}
	} else {
		q.stats.errors.Add(1)
	}
	r.CQE.SetStatus(st)
	r.core = requestCore{state: stateCompleted}
}

// completeInline finishes r in Execute; it returns done=true.
func (q *Queue) completeInline(r *Request, st nvme.Status) bool {
	q.finish(r, st)
	return true
}

// completeAsync finishes r outside Execute and hands it to the transport.
// Any goroutine.
func (q *Queue) completeAsync(r *Request, st nvme.Status) {
	q.finish(r, st)
	q.conn.Complete(r)
}

// runOrSubmit runs a parsed backend command inline when inline is true,
// else hands it to the worker pool.
func (q *Queue) runOrSubmit(r *Request, inline bool) bool {
	if inline {
		return q.completeInline(r, run(r))
	}
	return q.submit(r)
}

// submit hands r to the worker pool; done=false unless the pool is closed.
func (q *Queue) submit(r *Request) bool {
	p := q.t.pool
	if !p.gate.enter() {
		// The pool stops only in Target.Close.
		return q.completeInline(r, statusRefused)
	}
	r.core.state = stateQueued
	p.ch <- r
	return false
}
