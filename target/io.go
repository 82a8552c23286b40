package target

import (
	"errors"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/nvme"
)

// execIO parses an NVM I/O command on an I/O queue of a ready controller,
// checks it completely (namespace, direction, range, transfer length),
// takes a reference on the namespace and runs it inline (non-blocking
// backend) or on the worker pool. Nothing here allocates.
func (q *Queue) execIO(r *Request, c *Controller) bool {
	sqe := &r.SQE
	op := sqe.Opcode()
	switch op {
	case nvme.IORead, nvme.IOWrite, nvme.IOWriteZeroes, nvme.IOFlush, nvme.IODatasetMgmt:
	default:
		return q.completeInline(r, nvme.StatusInvalidOpcode.WithDNR())
	}
	tbl := c.subsys.ns.Load()
	nsid := sqe.NSID()
	if op == nvme.IOFlush && nsid == nsidBroadcast {
		if r.Length != 0 {
			return q.completeInline(r, nvme.StatusDataSGLLengthInvalid.WithDNR())
		}
		if st := c.anaFlushAllStatus(tbl); st != nvme.StatusSuccess {
			return q.completeInline(r, st)
		}
		rc := &r.core
		rc.kind = kindFlushAll
		rc.tbl = tbl
		return q.runOrSubmit(r, tbl.allInline)
	}
	n := tbl.get(nsid)
	if n == nil {
		return q.completeInline(r, nvme.StatusInvalidNamespace.WithDNR())
	}
	rc := &r.core
	for replaced := 0; ; replaced++ {
		if st := c.anaStatus(n.anaGroup); st != nvme.StatusSuccess {
			// The group is not accessible through this port (ana.go).
			return q.completeInline(r, st)
		}
		if done, ok := q.parseIO(r, n, op); !ok {
			return done
		}
		if n.ref.enter() {
			break
		}
		// Removed or replaced since the table was loaded. When the
		// target or the subsystem is going away that is not the host's
		// doing: refuse with a path error it retries elsewhere.
		if q.t.closed.Load() || c.gone.Load() {
			return q.completeInline(r, statusRefused)
		}
		if n.next.Load() != nil {
			// Its backend was replaced (ReplaceNamespaceBackend): run
			// on the namespace serving now, checked afresh. Commands
			// that keep losing to further swaps get a path error.
			if replaced == maxReplaced {
				return q.completeInline(r, statusRefused)
			}
			if n = c.subsys.ns.Load().get(nsid); n != nil {
				continue
			}
		}
		return q.completeInline(r, nvme.StatusInvalidNamespace.WithDNR())
	}
	rc.ns = n
	if n.meter != nil {
		q.meterStart(rc)
	}
	if n.async != nil && (rc.kind == kindRead || rc.kind == kindWrite) && q.submitAsync(r, n.async) {
		return false
	}
	return q.runOrSubmit(r, n.inline)
}

// parseIO checks an I/O command against namespace n and fills the request
// core. ok false: the command was completed (done is execIO's result).
func (q *Queue) parseIO(r *Request, n *namespace, op uint8) (done, ok bool) {
	sqe := &r.SQE
	rc := &r.core
	switch op {
	case nvme.IORead, nvme.IOWrite:
		st := q.parseRW(r, n, op == nvme.IOWrite)
		if st != nvme.StatusSuccess {
			return q.completeInline(r, st), false
		}
	case nvme.IOWriteZeroes:
		if n.readOnly {
			return q.completeInline(r, nvme.StatusNamespaceWriteProtected.WithDNR()), false
		}
		if r.Length != 0 {
			return q.completeInline(r, nvme.StatusDataSGLLengthInvalid.WithDNR()), false
		}
		cmd := nvme.RWCmd{SQE: sqe}
		slba, nlb := cmd.SLBA(), uint64(cmd.NLB())
		if !blockdev.RangeOK(slba, nlb, n.backend.Blocks()) {
			return q.completeInline(r, nvme.StatusLBAOutOfRange.WithDNR()), false
		}
		rc.kind, rc.slba, rc.nlb = kindWriteZeroes, slba, nlb
	case nvme.IOFlush:
		if r.Length != 0 {
			return q.completeInline(r, nvme.StatusDataSGLLengthInvalid.WithDNR()), false
		}
		rc.kind = kindFlush
	case nvme.IODatasetMgmt:
		cmd := nvme.DSMCmd{SQE: sqe}
		if cmd.Attributes()&nvme.DSMAttrDeallocate == 0 {
			// Only hints (IDR/IDW): nothing to do.
			return q.completeInline(r, nvme.StatusSuccess), false
		}
		st := q.parseDSM(r, n, cmd.NR())
		if st != nvme.StatusSuccess {
			return q.completeInline(r, st), false
		}
	}
	return false, true
}

// parseRW checks a Read or Write and fills the request core.
func (q *Queue) parseRW(r *Request, n *namespace, write bool) nvme.Status {
	want := nvme.DirCtrlToHost
	if write {
		if n.readOnly {
			return nvme.StatusNamespaceWriteProtected.WithDNR()
		}
		want = nvme.DirHostToCtrl
	}
	if r.Dir != want {
		return nvme.StatusInvalidField.WithDNR()
	}
	cmd := nvme.RWCmd{SQE: &r.SQE}
	slba, nlb := cmd.SLBA(), uint64(cmd.NLB())
	if !blockdev.RangeOK(slba, nlb, n.backend.Blocks()) {
		return nvme.StatusLBAOutOfRange.WithDNR()
	}
	// nlb ≤ 65536 and a block ≤ 64 KiB: the product fits easily.
	if nlb<<n.shift != uint64(r.Length) || uint64(len(r.Data)) < uint64(r.Length) {
		return nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	rc := &r.core
	rc.kind = kindRead
	if write {
		rc.kind = kindWrite
		rc.fua = cmd.FUA()
	}
	rc.slba, rc.nlb = slba, nlb
	rc.vec[0] = r.Data[:r.Length]
	return nvme.StatusSuccess
}

// parseDSM checks a Dataset Management deallocate: NR ranges in Data, each
// within the namespace, all checked before any is discarded.
func (q *Queue) parseDSM(r *Request, n *namespace, nr int) nvme.Status {
	if n.readOnly {
		return nvme.StatusNamespaceWriteProtected.WithDNR()
	}
	need := uint64(nr) * nvme.DSMRangeSize
	if r.Dir != nvme.DirHostToCtrl || uint64(r.Length) < need || uint64(len(r.Data)) < need {
		return nvme.StatusDataSGLLengthInvalid.WithDNR()
	}
	blocks := n.backend.Blocks()
	for i := range nr {
		rg, _ := nvme.ParseDSMRange(r.Data, i) // length checked above
		if !blockdev.RangeOK(rg.SLBA, uint64(rg.NLB), blocks) {
			return nvme.StatusLBAOutOfRange.WithDNR()
		}
	}
	rc := &r.core
	rc.kind = kindDiscard
	rc.nlb = uint64(nr)
	return nvme.StatusSuccess
}

// run performs the backend work of a parsed request and returns its
// status. It runs on the queue goroutine (inline backends) or a worker.
func run(r *Request) nvme.Status {
	rc := &r.core
	switch rc.kind {
	case kindRead:
		return rc.status(rc.ns.backend.ReadAt(rc.vec[:], rc.slba))
	case kindWrite:
		var fl blockdev.WriteFlags
		if rc.fua {
			fl = blockdev.WriteFUA
		}
		return rc.status(rc.ns.backend.WriteAt(rc.vec[:], rc.slba, fl))
	case kindFlush:
		return rc.status(rc.ns.backend.Flush())
	case kindWriteZeroes:
		return rc.status(rc.ns.backend.WriteZeroes(rc.slba, rc.nlb))
	case kindDiscard:
		for i := range int(rc.nlb) {
			rg, _ := nvme.ParseDSMRange(r.Data, i)
			if rg.NLB == 0 {
				continue
			}
			if err := rc.ns.backend.Discard(rg.SLBA, uint64(rg.NLB)); err != nil {
				return rc.status(err)
			}
		}
		return nvme.StatusSuccess
	case kindFlushAll:
		return rc.status(flushAll(rc.tbl, false))
	case kindShutdown:
		rc.ctrl.shutdownDone(flushAll(rc.tbl, true))
		return nvme.StatusSuccess
	case kindAuthSend, kindAuthRecv:
		return runAuth(r)
	}
	return nvme.StatusInternalError
}

// status maps the backend error of rc's command to its NVMe status and
// accounts a full backing store (nospace.go). Every backend completion —
// inline, worker or asynchronous — goes through it.
func (rc *requestCore) status(err error) nvme.Status {
	if err == nil {
		return nvme.StatusSuccess
	}
	st := backendStatus(err, rc.kind == kindRead)
	if st.Code() == nvme.StatusCapacityExceeded {
		rc.q.t.noSpace(rc.ns, err)
	}
	return st
}

// flushAll flushes every namespace of tbl that is still attached and
// returns the first error. A namespace whose backend was replaced since
// tbl was loaded (ReplaceNamespaceBackend) is flushed in its current
// form when follow is set (a shutdown's flush); otherwise the flush
// fails with a path error the host retries (errReplacedDuringFlush): a
// host's Flush must reach the backends that serve when it runs.
func flushAll(tbl *nsTable, follow bool) error {
	var first error
	for _, n := range tbl.byID {
		if n == nil {
			continue
		}
		if !n.ref.enter() {
			if n.next.Load() == nil {
				continue // detached: nothing of the host's left to flush
			}
			if !follow {
				if first == nil {
					first = errReplacedDuringFlush
				}
				continue
			}
			var ok bool
			if n, ok = n.current(); !ok {
				continue
			}
		}
		if err := n.backend.Flush(); err != nil && first == nil {
			first = err
		}
		n.ref.leave()
	}
	return first
}

// backendStatus maps a backend error to an NVMe status (see the blockdev
// package documentation for the table).
func backendStatus(err error, read bool) nvme.Status {
	switch {
	case err == nil:
		return nvme.StatusSuccess
	case errors.Is(err, blockdev.ErrPathUnavailable):
		// Checked first: a mirror's ErrLocalFaulted also wraps the
		// local leg's error (ErrMedium, ErrClosed...). Asymmetric
		// Access Inaccessible (NVMe Base 2.0 §4.6.1.2.2, Figure 105
		// Path Related Status SC 02h), without DNR, is what makes a
		// multipath host (Linux nvme_failover_req, our Session) retry
		// the command on another controller and re-read the ANA log.
		return nvme.StatusANAInaccessible
	case errors.Is(err, blockdev.ErrOutOfRange):
		return nvme.StatusLBAOutOfRange.WithDNR()
	case errors.Is(err, blockdev.ErrUnaligned):
		return nvme.StatusInvalidField.WithDNR()
	case errors.Is(err, blockdev.ErrMedium):
		if read {
			return nvme.StatusUnrecoveredRead
		}
		return nvme.StatusWriteFault
	case errors.Is(err, blockdev.ErrReadOnly):
		return nvme.StatusNamespaceWriteProtected.WithDNR()
	case errors.Is(err, blockdev.ErrClosed):
		return nvme.StatusNamespaceNotReady
	case isNoSpace(err):
		// Capacity Exceeded (NVMe base spec §4.1.1.2, SC 81h), with DNR
		// as nvmet answers ENOSPC: retrying cannot help until an admin
		// frees space. Not Internal Error, which hosts retry.
		return nvme.StatusCapacityExceeded.WithDNR()
	default:
		return nvme.StatusInternalError
	}
}
