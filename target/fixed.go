package target

import "github.com/rdmablk/rdmablk/blockdev"

// maxFixed bounds the backends one queue registers its data region with
// (a queue rarely uses more than a few namespaces); past it, I/O on the
// others uses plain asynchronous ops.
const maxFixed = 8

// fixedReg is one backend's registration of the queue's data region. reg
// is 0 when the backend refused it (no retry: plain ops for this queue).
type fixedReg struct {
	b   blockdev.FixedBuffers
	reg blockdev.FixedRegion
}

// SetDataRegion tells the core the memory every Request.Data of this
// queue lives in (the transport's registered buffer pool, e.g. RDMA
// registered memory). Backends that can pre-register memory
// (blockdev.FixedBuffers: io_uring fixed buffers) get it registered once,
// at the queue's first read or write on them, and their I/O on buffers
// inside it then skips the per-I/O page pinning. Destroy drops the
// registrations.
//
// Optional; transport goroutine only, before the first Execute. mem must
// stay mapped until Destroy has returned and every request of the queue
// has been completed (which the transport guarantees for Data anyway).
// A buffer outside mem is served as without a region.
func (q *Queue) SetDataRegion(mem []byte) { q.region = mem }

// fixedFor returns the registration of the queue's region with b,
// registering it on first use. 0 means none (no region, table full,
// refused). Transport goroutine only; allocation-free after the first
// call per backend.
func (q *Queue) fixedFor(b blockdev.FixedBuffers) blockdev.FixedRegion {
	for i := range q.nFixed {
		if q.fixed[i].b == b {
			return q.fixed[i].reg
		}
	}
	if q.nFixed == maxFixed {
		q.pruneFixed()
		if q.nFixed == maxFixed {
			return 0
		}
	}
	reg, err := b.RegisterFixed(q.region)
	if err != nil {
		// RLIMIT_MEMLOCK (ENOMEM), EPERM, an old kernel: the plain ops
		// carry on; once per queue and backend.
		q.t.log.Debug("nvmet: fixed buffers unavailable, using plain io_uring ops", "qid", q.qid, "err", err)
		reg = 0
	}
	q.fixed[q.nFixed] = fixedReg{b: b, reg: reg}
	q.nFixed++
	return reg
}

// dropFixed unregisters the queue's region from every backend (Destroy).
// I/Os still in flight against it complete normally.
func (q *Queue) dropFixed() {
	for i := range q.nFixed {
		if f := q.fixed[i]; f.reg != 0 {
			f.b.UnregisterFixed(f.reg)
		}
		q.fixed[i] = fixedReg{}
	}
	q.nFixed = 0
}

// pruneFixed drops the registrations with backends that no namespace of
// the queue's subsystem runs on any more (detached, or replaced by
// ReplaceNamespaceBackend, as a replicated volume's failovers do on a
// queue that stays connected), so that the backends in their place get
// fixed buffers too. I/Os still in flight against a dropped registration
// complete normally (as for dropFixed). Transport goroutine only; called
// when the table is full, so never per I/O.
func (q *Queue) pruneFixed() {
	c := q.ctrl.Load()
	if c == nil {
		return
	}
	tbl := c.subsys.ns.Load()
	kept := 0
	for i := range q.nFixed {
		f := q.fixed[i]
		q.fixed[i] = fixedReg{}
		if tbl.usesFixed(f.b) {
			q.fixed[kept] = f
			kept++
			continue
		}
		if f.reg != 0 {
			f.b.UnregisterFixed(f.reg)
		}
	}
	q.nFixed = kept
}

// usesFixed reports whether a namespace of t runs on b.
func (t *nsTable) usesFixed(b blockdev.FixedBuffers) bool {
	for _, n := range t.byID {
		if n != nil && n.fixed == b {
			return true
		}
	}
	return false
}
