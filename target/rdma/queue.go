package rdma

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/regmem"
)

// Work request IDs: kind in bits 63:56, an index (request slot or receive
// buffer) in bits 31:0.
const (
	wrRecv  = 1
	wrRead  = 2
	wrWrite = 3
	wrSend  = 4
)

func wrID(kind uint64, idx int32) uint64 { return kind<<56 | uint64(uint32(idx)) }

func splitWRID(id uint64) (kind uint64, idx int32) { return id >> 56, int32(uint32(id)) }

// queue is one RDMA connection = one NVMe queue. After setup every field
// below is owned by its poller — the goroutine of the poll group that owns
// the queue, then the queue's teardown goroutine (finish) — except the
// channels, ctl and the Once values used by Complete, Close and drain.
type queue struct {
	l      *Listener
	log    *slog.Logger
	params queueParams

	id verbs.ConnID
	pd verbs.ProtectionDomain
	// cq takes the receive completions, scq the send-queue ones (READ,
	// and the response SEND; WRITEs are unsignaled). Split so that an idle
	// queue sleeps with only cq armed: a response SEND's completion only
	// frees the slot and credits, which the next command's pass reaps, so
	// it need not wake the poller (one wake-up per I/O less; on rxe a
	// wake-up is several system calls and goroutine switches). scq is
	// armed only while something waits for it (armSendCQ).
	cq      verbs.CompletionQueue
	scq     verbs.CompletionQueue
	qp      verbs.QueuePair
	region  *regmem.Region         // address space of every buffer below (regmem.Reserve)
	small   *regmem.Registration   // receive, CQE and bootstrap buffers (one region, from accept)
	chunks  []*regmem.Registration // data buffer chunks registered so far (after Connect)
	mem     []byte                 // region.Bytes()
	core    coreQueue
	batch   batcher // core as a batcher, nil when it is not one
	sendInv bool    // the device can SEND_WITH_INV

	// A receive is two SGEs: its 64-byte SQE in a packed array at offset
	// 0 of mem, and (with in-capsule data) its in-capsule data buffer of
	// params.icd bytes on a dataAlign boundary in the array at icdOff.
	icdOff    int // offset of the in-capsule data buffers in mem
	icdStride int // distance between in-capsule data buffers
	dataSize  int // bytes per data buffer (MaxDataTransfer)
	// dataStride is the distance between data buffers: dataSize plus one
	// page when dataSize is 64 KiB or more, so that buffers do not all
	// start at the same offset modulo a power of two (the first pages of
	// 32 buffers 1 MiB apart compete for the same CPU cache sets: a 4 KiB
	// read benchmark ran 26% slower at 1 MiB than at 128 KiB).
	dataStride int
	cqeOff     int // offset of the CQE buffers in mem
	bootOff    int // offset of the bootstrap data buffer in mem
	dataOff    int // offset of data buffer 0 in mem
	// bootIdx is the buffer index of the bootstrap buffer (bootSize bytes
	// in the small registration): the only data buffer before Connect (the
	// admin Connect's data comes by RDMA READ), retired once the data
	// buffers are registered.
	bootIdx int32
	// connected: a Fabrics Connect succeeded on this queue and its first
	// chunk of data buffers is registered (poller-owned).
	connected bool
	// dataBufs is the number of data buffers registered (they are
	// 0..dataBufs-1, in chunks registered as commands needed them);
	// bufBase[i] is the address and lkey of buffer i; noGrow stops
	// growth after a failed registration.
	dataBufs int
	bufBase  []verbs.SGE
	noGrow   bool
	// Small data buffers (smallSize bytes each, smallStride apart from
	// smallOff; ids smallBase+j, after the large ones and the bootstrap
	// buffer in bufBase): a command of at most smallSize bytes takes one,
	// so a queue doing 4 KiB I/O registers smallSize per command in
	// flight instead of MaxDataTransfer (SPDK's small/large iobuf pools).
	// Growing the large pool to 64 × 1 MiB for 4 KiB reads registered
	// 63 MiB in six steps on the poller, and each stalled the queue's
	// whole poll group: in the lab, 1 % of 4 KiB reads at QD32 took 0.5 s
	// (gone with 128 KiB buffers). smallSize 0: no small class
	// (MaxDataTransfer is no larger).
	smallSize   int
	smallStride int
	smallOff    int
	smallBase   int32
	smallBufs   int // registered (smallBase..smallBase+smallBufs-1)
	noGrowSmall bool
	freeSmall   []int32 // stack of free small buffer ids
	// src is the host address (no port) the unconnected caps count by;
	// unconn is set while the queue counts against them.
	src    string
	unconn bool

	slots     []request
	freeSlots []int32 // stack of free slot indices
	freeBufs  []int32 // stack of free data buffer indices
	recvSGE   []verbs.SGE

	bufWait  waitList // StateNeedBuffer
	readWait waitList // StateReadFromHostPending
	sendWait waitList // StateWriteToHostPending, StateCompletePending

	// backlog holds receive completions that found no free slot (FIFO).
	backlog     []backlogEntry
	backlogHead int
	backlogLen  int

	recvBatch []verbs.RecvWR
	nRecv     int
	sendBatch []verbs.SendWR
	nSend     int
	wc        []verbs.WorkCompletion

	sendCredits int // free send-queue slots
	readCredits int // RDMA READs we may still post (ORD)
	postedRecvs int // receives posted and not yet polled
	outstanding int // signaled send WRs posted and not yet polled
	executing   int // requests the core holds
	active      int // slots not Free
	heldAER     int // active slots that are AERs held by the core

	draining bool
	dying    bool // fatal error or teardown: nothing more is posted

	// g is the poll group that owns the queue; ctl holds control events
	// for it (ctl* bits); watchStop ends the watcher goroutine; the timers
	// are the Fabrics Connect and drain deadlines.
	g      *pollGroup
	routed bool // the CQs' notifications ring g.bell (set before the group owns q)
	quiet  quietState
	clean  cleanState // clean.go
	// fdCQs are the CQs whose events the group takes from its epoll set
	// (epollWaiter.attach); group goroutine only.
	fdCQs      []verbs.FDNotifier
	ctl        atomic.Uint32
	watchStop  chan struct{}
	watchDone  chan struct{}
	connTimer  *time.Timer
	drainTimer *time.Timer
	// compCh carries slot indices from QueueConn.Complete (capacity =
	// slots, so Complete never blocks).
	compCh    chan int32
	killCh    chan struct{}
	killOnce  sync.Once
	drainCh   chan struct{}
	drainOnce sync.Once
	destroyed bool
	// accepted is set by setup before the poller starts when the
	// connection was established.
	accepted bool
	// st are this queue's I/O counters (see counters).
	st counters
	// done is closed when the queue's resources are released.
	done chan struct{}
}

type backlogEntry struct {
	recv int32
	n    int
}

// waitList is an intrusive FIFO of slot indices linked through
// request.next; it never allocates.
type waitList struct {
	head, tail int32
	n          int
}

func (w *waitList) init() { w.head, w.tail, w.n = -1, -1, 0 }

func (w *waitList) empty() bool { return w.n == 0 }

func (w *waitList) push(q *queue, r *request) {
	r.next = -1
	if w.n == 0 {
		w.head = r.idx
	} else {
		q.slots[w.tail].next = r.idx
	}
	w.tail = r.idx
	w.n++
}

func (w *waitList) peek(q *queue) *request { return &q.slots[w.head] }

func (w *waitList) pop(q *queue) *request {
	r := &q.slots[w.head]
	w.head = r.next
	r.next = -1
	w.n--
	if w.n == 0 {
		w.tail = -1
	}
	return r
}

// bootSize is the size of the bootstrap data buffer a queue has before its
// Fabrics Connect succeeded: enough for the Connect data (1,024 bytes).
const bootSize = 4096

// newQueue allocates the resources of a connection that a host gets before
// it proved itself with a Fabrics Connect: PD, CQ, QP, the request slots,
// the receive and CQE buffers and one small bootstrap data buffer, all
// registered as one memory region, and posts one receive per queue entry.
// The data buffers (depth × MaxDataTransfer) only get address space here;
// enableData registers a first chunk of them after a successful Connect and
// grow more as commands in flight need them (issue 10 item 2: a silent
// connection pins kilobytes, not megabytes; issue 12 item 4: a connected
// queue pins what it has in flight). On error everything
// allocated so far is released.
func (l *Listener) newQueue(id verbs.ConnID, dev verbs.Device, attr verbs.DeviceAttr, p queueParams) (q *queue, err error) {
	q = &queue{
		l:       l,
		log:     l.log.With("remote", id.RemoteAddr(), "qid", p.qid),
		params:  p,
		id:      id,
		sendInv: attr.Caps.Has(verbs.CapSendWithInv) && (l.cfg.SendWithInvalidate == nil || *l.cfg.SendWithInvalidate),
		compCh:  make(chan int32, 2*p.depth),
		killCh:  make(chan struct{}),
		drainCh: make(chan struct{}),
		done:    make(chan struct{}),
		bootIdx: int32(p.depth),
	}
	defer func() {
		if err != nil {
			q.release(false)
			q = nil
		}
	}()
	nslots := 2 * p.depth
	q.dataSize = l.cfg.MaxDataTransfer
	q.dataStride = q.dataSize
	if q.dataSize >= 64<<10 {
		q.dataStride += dataAlign
	}
	limit := regmem.MaxChunk
	if l.cfg.mrChunk > 0 {
		limit = l.cfg.mrChunk
	}
	// Layout: SQEs (packed), in-capsule data buffers (page-aligned),
	// CQEs, the bootstrap buffer (one memory region), then on a huge page
	// boundary the data buffers.
	q.icdOff, q.icdStride, q.cqeOff, q.bootOff = smallLayout(p.depth, p.icd)
	recvSGEs := 1
	if p.icd > 0 {
		recvSGEs = 2
		if attr.MaxSGE > 0 && attr.MaxSGE < 2 {
			return q, fmt.Errorf("device allows %d SGEs per receive, in-capsule data needs 2", attr.MaxSGE)
		}
	}
	small := q.bootOff + bootSize
	if small > limit {
		return q, fmt.Errorf("%d bytes of receive and CQE buffers exceed one %d-byte memory region", small, limit)
	}
	q.dataOff = alignUp(small, regmem.HugePageSize)
	if q.dataSize > smallDataSize {
		q.smallSize, q.smallStride = smallDataSize, smallDataSize
		q.smallOff = q.dataOff
		q.smallBase = int32(p.depth + 1)
		q.dataOff = alignUp(q.smallOff+p.depth*q.smallStride, regmem.HugePageSize)
	}
	total := q.dataOff + p.depth*q.dataStride

	if q.pd, err = dev.AllocPD(); err != nil {
		return q, fmt.Errorf("alloc PD: %w", err)
	}
	vector := 0
	if n := attr.NumCompVectors; p.qid != 0 && n > 1 {
		vector = int(l.vector.Add(1)) % n
	}
	if q.cq, err = dev.CreateCQ(p.rcqe, vector); err != nil {
		return q, fmt.Errorf("create receive CQ: %w", err)
	}
	if q.scq, err = dev.CreateCQ(p.scqe, vector); err != nil {
		return q, fmt.Errorf("create send CQ: %w", err)
	}
	if q.qp, err = id.CreateQP(q.pd, verbs.QPInitAttr{
		SendCQ: q.scq,
		RecvCQ: q.cq,
		Cap: verbs.QPCap{
			MaxSendWR:  p.sendQ,
			MaxRecvWR:  p.depth,
			MaxSendSGE: 1,
			MaxRecvSGE: recvSGEs,
		},
	}); err != nil {
		return q, fmt.Errorf("create QP: %w", err)
	}
	if q.region, err = regmem.Reserve(total); err != nil {
		return q, fmt.Errorf("reserve %d bytes: %w", total, err)
	}
	q.mem = q.region.Bytes()
	if q.small, err = regmem.Register(q.pd, q.mem[:small], 0, verbs.AccessLocalWrite); err != nil {
		return q, fmt.Errorf("register %d bytes: %w", small, err)
	}
	l.stats.registeredBytes.Add(uint64(small))

	q.slots = make([]request, nslots)
	q.freeSlots = make([]int32, 0, nslots)
	for i := nslots - 1; i >= 0; i-- {
		r := &q.slots[i]
		r.idx = int32(i)
		r.reset()
		off := q.cqeOff + i*nvme.CQESize
		r.cqe = q.mem[off : off+nvme.CQESize : off+nvme.CQESize]
		r.sge[1] = q.small.SGE(off, nvme.CQESize)
		r.req.Tag = uint32(i)
		q.freeSlots = append(q.freeSlots, int32(i))
	}
	q.freeBufs = make([]int32, 0, p.depth+1)
	q.freeBufs = append(q.freeBufs, q.bootIdx)
	q.bufBase = make([]verbs.SGE, p.depth+1)
	if q.smallSize > 0 {
		q.bufBase = make([]verbs.SGE, int(q.smallBase)+p.depth)
		q.freeSmall = make([]int32, 0, p.depth)
	}
	q.recvSGE = make([]verbs.SGE, 2*p.depth)
	for i := range p.depth {
		q.recvSGE[2*i] = q.small.SGE(i*nvme.SQESize, nvme.SQESize)
		q.recvSGE[2*i+1] = q.small.SGE(q.icdOff+i*q.icdStride, uint32(p.icd))
	}
	q.bufWait.init()
	q.readWait.init()
	q.sendWait.init()
	q.backlog = make([]backlogEntry, p.depth)
	q.recvBatch = make([]verbs.RecvWR, p.depth)
	q.sendBatch = make([]verbs.SendWR, p.sendQ)
	q.wc = make([]verbs.WorkCompletion, min(64, max(p.rcqe, p.scqe)))
	q.sendCredits = p.sendQ
	q.readCredits = p.ord

	for i := range p.depth {
		q.repostRecv(int32(i))
	}
	if !q.flushRecvs() {
		return q, fmt.Errorf("post %d receives: %w", p.depth, verbs.ErrQueueFull)
	}
	return q, nil
}

// enableData registers the queue's first chunk of data buffers after a
// successful Fabrics Connect (poller goroutine); the bootstrap buffer is
// retired (at once when free, else when returned). Further chunks are
// registered by grow as commands in flight need them.
func (q *queue) enableData() error {
	if q.connected {
		return nil
	}
	// The first chunk: small buffers when the queue has them (the large
	// pool then grows from nothing when a large command comes), else
	// large ones.
	grow := q.grow
	if q.smallSize > 0 {
		grow = q.growSmall
	}
	if err := grow(true); err != nil {
		return err
	}
	q.connected = true
	for i, b := range q.freeBufs {
		if b == q.bootIdx {
			q.freeBufs = append(q.freeBufs[:i], q.freeBufs[i+1:]...)
			break
		}
	}
	return nil
}

// growBase is the number of data buffers of the first chunk: 1 MiB worth,
// at least one, at most the queue depth.
func (q *queue) growBase() int {
	return min(q.params.depth, max(1, growChunkBytes/q.dataSize))
}

// smallGrowBase is the number of small buffers in the first small chunk.
func (q *queue) smallGrowBase() int {
	return min(q.params.depth, max(1, growChunkBytes/q.smallSize))
}

// smallDataSize is the size of the small data buffers (see
// queue.smallSize): the 4 KiB–16 KiB I/O most hosts issue.
const smallDataSize = 16 << 10

// growSmall registers the next chunk of small data buffers: the first
// (smallGrowBase buffers, 1 MiB) at Connect, then doubling up to one per
// queue entry, under the listener's cap like grow.
func (q *queue) growSmall(first bool) error {
	if q.smallSize == 0 {
		return errNoGrowth
	}
	return q.growPool(poolChunk{off: q.smallOff, stride: q.smallStride, base: int(q.smallBase), have: &q.smallBufs,
		firstN: q.smallGrowBase(), free: &q.freeSmall, noGrow: &q.noGrowSmall, what: "small data buffers"}, first, first)
}

// poolChunk describes one data-buffer pool of a queue to growPool: its
// buffers are stride bytes apart from mem offset off, have of them are
// registered, buffer j has id base+j.
type poolChunk struct {
	off, stride, base, firstN int
	have                      *int
	free                      *[]int32
	noGrow                    *bool
	what                      string
}

// growPool registers the next chunk of pool p: firstN buffers first, then
// as many as are registered (doubling), up to one per queue entry, in
// memory regions of at most regmem.MaxChunk bytes, each a whole number of
// buffers. uncapped chunks skip Config.MaxDataBufferBytes.
func (q *queue) growPool(p poolChunk, first, uncapped bool) error {
	depth := q.params.depth
	if *p.have >= depth || *p.noGrow {
		return errNoGrowth
	}
	n := p.firstN
	if !first {
		n = min(depth-*p.have, max(n, *p.have))
	}
	bytes := n * p.stride
	if !q.l.reserveData(bytes, uncapped) {
		q.l.stats.growthDenied.Add(1)
		return errNoGrowth
	}
	limit := regmem.MaxChunk
	if q.l.cfg.mrChunk > 0 {
		limit = q.l.cfg.mrChunk
	}
	off := p.off + *p.have*p.stride
	data := q.mem[off : off+bytes : off+bytes]
	regmem.AdviseHuge(data)
	reg, err := regmem.Register(q.pd, data, limit/p.stride*p.stride, verbs.AccessLocalWrite)
	if err != nil {
		q.l.releaseData(bytes)
		*p.noGrow = true
		return fmt.Errorf("register %d bytes of %s: %w", bytes, p.what, err)
	}
	q.chunks = append(q.chunks, reg)
	q.l.stats.registeredBytes.Add(uint64(bytes))
	base := p.base + *p.have
	for i := range n {
		q.bufBase[base+i] = reg.SGE(i*p.stride, 0)
	}
	for i := n - 1; i >= 0; i-- {
		*p.free = append(*p.free, int32(base+i))
	}
	*p.have += n
	return nil
}

// growChunkBytes is the size of a queue's first chunk of data buffers;
// each further chunk doubles the buffers registered.
const growChunkBytes = 1 << 20

// grow registers the next chunk of data buffers (poller goroutine): the
// first chunk (growBase buffers) at Connect, then as many buffers as are
// registered already (doubling), up to one per queue entry. Each chunk is
// registered in memory regions of at most regmem.MaxChunk bytes, each a
// whole number of buffers, so no buffer straddles two regions. Except for
// the first chunk, growth must fit under Config.MaxDataBufferBytes across
// the listener; when it does not, the command waits for one of the
// queue's own buffers (StateNeedBuffer), as it always could.
func (q *queue) grow(first bool) error {
	// The large pool's first chunk is always allowed, as the first small
	// chunk is: a queue must be able to run a command of any size.
	return q.growPool(poolChunk{off: q.dataOff, stride: q.dataStride, base: 0, have: &q.dataBufs,
		firstN: q.growBase(), free: &q.freeBufs, noGrow: &q.noGrow, what: "data buffers"}, first, first || q.dataBufs == 0)
}

func alignUp(n, a int) int { return (n + a - 1) / a * a }

// smallLayout places the memory a queue registers at connect: depth packed
// SQEs, depth in-capsule data buffers of icd bytes each on dataAlign
// boundaries (so a file backend writes them with O_DIRECT), 2×depth CQEs,
// and the bootstrap buffer; the region is bootOff + bootSize bytes.
func smallLayout(depth, icd int) (icdOff, icdStride, cqeOff, bootOff int) {
	icdOff = alignUp(depth*nvme.SQESize, dataAlign)
	icdStride = alignUp(icd, dataAlign)
	cqeOff = icdOff + depth*icdStride
	bootOff = alignUp(cqeOff+2*depth*nvme.CQESize, dataAlign)
	return
}

// dataAlign is the alignment of data buffers and of in-capsule data in
// the registered memory: the O_DIRECT alignment of 4 KiB-sector devices,
// so a file backend moves every transfer between the file and registered
// memory directly (no bounce through the page cache).
const dataAlign = 4096

// sqeBuf returns the SQE part of receive i.
func (q *queue) sqeBuf(i int32) []byte {
	off := int(i) * nvme.SQESize
	return q.mem[off : off+nvme.SQESize : off+nvme.SQESize]
}

// icdBuf returns the in-capsule data part of receive i (params.icd bytes).
func (q *queue) icdBuf(i int32) []byte {
	off := q.icdOff + int(i)*q.icdStride
	return q.mem[off : off+q.params.icd : off+q.params.icd]
}

// recvSGL is the scatter list of receive i: the SQE, then the in-capsule
// data buffer when the queue accepts in-capsule data.
func (q *queue) recvSGL(i int32) []verbs.SGE {
	if q.params.icd > 0 {
		return q.recvSGE[2*i : 2*i+2]
	}
	return q.recvSGE[2*i : 2*i+1]
}

// dataBuf returns data buffer i.
func (q *queue) dataBuf(i int32) []byte {
	if i == q.bootIdx {
		return q.mem[q.bootOff : q.bootOff+bootSize : q.bootOff+bootSize]
	}
	if q.smallSize > 0 && i >= q.smallBase {
		off := q.smallOff + int(i-q.smallBase)*q.smallStride
		return q.mem[off : off+q.smallSize : off+q.smallSize]
	}
	off := q.dataOff + int(i)*q.dataStride
	return q.mem[off : off+q.dataSize : off+q.dataSize]
}

// dataSGE describes the first n bytes of data buffer i.
func (q *queue) dataSGE(i int32, n uint32) verbs.SGE {
	if i == q.bootIdx {
		return q.small.SGE(q.bootOff, n)
	}
	s := q.bufBase[i]
	s.Length = n
	return s
}

// Complete implements target.QueueConn. It hands a request the core left
// pending back to the queue's poller and rings its poll group; it never blocks (the channel holds one entry
// per slot) and may be called from any goroutine, also after teardown
// started.
func (q *queue) Complete(r *target.Request) {
	if r == nil || int(r.Tag) >= len(q.slots) || &q.slots[r.Tag].req != r {
		q.log.Error("rdma: Complete with a request of another queue")
		return
	}
	select {
	case q.compCh <- int32(r.Tag):
		if g := q.g; g != nil {
			g.ring()
		}
	default:
		q.log.Error("rdma: Complete called more than once", "tag", r.Tag)
	}
}

// Close implements target.QueueConn: the core asks to tear the connection
// down (keep-alive expiry, controller teardown). The poller disconnects and
// calls Queue.Destroy. Idempotent, never blocks.
func (q *queue) Close() { q.killOnce.Do(func() { close(q.killCh) }) }

// drain asks the poller for a graceful shutdown (Listener.Close).
func (q *queue) drain() { q.drainOnce.Do(func() { close(q.drainCh) }) }

// destroyCore calls Queue.Destroy once.
func (q *queue) destroyCore() {
	if q.core != nil && !q.destroyed {
		q.destroyed = true
		q.core.Destroy()
	}
}

// release closes every verbs object except the ConnID and frees the memory. The caller
// guarantees that no work request and no core request can still touch the
// memory, unless leak is set: then the memory is deliberately not unmapped.
func (q *queue) release(leak bool) {
	var errs []error
	if q.qp != nil {
		errs = append(errs, q.qp.Close())
	}
	for _, reg := range q.chunks {
		errs = append(errs, reg.Close())
	}
	q.chunks = nil
	if n := q.dataBufs*q.dataStride + q.smallBufs*q.smallStride; n > 0 {
		q.l.stats.registeredBytes.Add(^uint64(n - 1))
		q.l.releaseData(n)
		q.dataBufs, q.smallBufs = 0, 0
	}
	if q.small != nil {
		errs = append(errs, q.small.Close())
		q.l.stats.registeredBytes.Add(^uint64(q.bootOff + bootSize - 1))
		q.small = nil
	}
	if q.cq != nil {
		errs = append(errs, q.cq.Close())
	}
	if q.scq != nil {
		errs = append(errs, q.scq.Close())
	}
	if q.pd != nil {
		errs = append(errs, q.pd.Close())
	}
	if q.region != nil && !leak {
		errs = append(errs, q.region.Free())
		q.mem = nil
	}
	for _, err := range errs {
		if err != nil && !errors.Is(err, verbs.ErrClosed) {
			q.log.Debug("rdma: releasing queue", "err", err)
		}
	}
}
