package tcpzc

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rdmablk/rdmablk/blockdev/uring"
)

// Sender sends a connection's large writes with io_uring's zero-copy
// sendmsg (IORING_OP_SENDMSG_ZC, Linux 6.1); docs/tcp-zero-copy.md has the
// design. The socket stays with Go's poller: the notices come back as
// completions on the connection's own small ring, never on the socket's
// error queue (which would make the socket poll EPOLLERR alone, see the
// doc).
//
// Every write that sends bytes zero-copy gets a record; its sends carry
// the record's id as user data. The kernel posts each send's completion
// inline (MSG_DONTWAIT: a full socket fails it with EAGAIN) and a notice
// per send later, once the network stack no longer references the pages
// (the peer acknowledged them, or the socket dropped them). What a sealed
// record holds — the target's slots and the buffer of its small PDUs —
// stays out of use until every notice of the record is in (Seal, then the
// release callback): a retransmission must never carry a later command's
// bytes. The host side seals records that hold nothing (package doc).
//
// Ownership: mu guards everything; the connection's writer of the moment
// sends and seals, anyone may reap, the connection's end closes.
type Sender struct {
	mu     sync.Mutex
	ring   *uring.Ring
	flags  uint16 // SQE.IOPrio: SendZCReportUsage until a kernel refuses it
	probed bool   // a send has completed: the opcode works
	closed bool
	// off: the kernel has no IORING_OP_SENDMSG_ZC (Linux < 6.1).
	off atomic.Bool
	// copying: the kernel reported that it copied the data of every one
	// of the first CopiedProbe notices (a peer on this machine): the
	// connection's writes copy from then on. seen, copied: notices so far.
	copying      atomic.Bool
	seen, copied int
	// msg is the sendmsg header; the kernel reads it (and the iovecs)
	// while the send is issued, which ends before send returns.
	msg  unix.Msghdr
	cqes [16]uring.CQE
	// recs by id-1; free ids for reuse.
	recs  []record
	free  []uint32
	outs  [][]byte // spare small-PDU buffers
	notes int      // notices still to come, all records
	// cqCap is the ring's completion queue size: notes stays below it, so
	// the CQ never overflows (the kernel would then keep completions in a
	// list only a GETEVENTS call flushes).
	cqCap int
	// release returns a sealed record's slots (the connection's
	// callback). The target's also keeps the connection, and so the slot
	// buffers the kernel may still read, reachable for as long as the
	// sender is (see abandon).
	release func(slots []uint16)
	stats   *Counters
	// lost is the record whose send's completion did not come within
	// sendWait (0: none): the sender is off, and one notice is counted
	// for the record until that completion says whether one comes.
	lost uint32
	// rwFlags are the sends' msg flags: MSG_DONTWAIT (tests drop it).
	rwFlags uint32
	// host: a host-side sender (NewHost), whose records hold nothing.
	host bool
}

// record is one write's zero-copy state.
type record struct {
	notices int  // notices still to come (the sends' completions add them)
	sealed  bool // the write ended: slots and out are attached
	slots   []uint16
	out     []byte
}

// New makes the connection's ring. nil when io_uring is
// unavailable (broken: for good, the kernel refuses io_uring).
func New(release func([]uint16), st *Counters) (z *Sender, broken bool) {
	r, err := uring.New(ringEntries)
	return newSender(r, err, release, st, false)
}

// NewHost makes the ring of a host-side sender (the initiator's capsule
// sends), whose records hold nothing: a command's buffers are free once
// its response is in, and the response implies the acknowledgement that
// lets the kernel go of them (docs/tcp-zero-copy.md, "The host side").
// Its notices only bound the ring, so they may come late: the ring is
// made with SetupCoopTaskrun (where the kernel has it, 5.19+), so a notice
// — posted through the task work of the thread that sent — does not wake
// that thread when it sleeps (the peer acknowledges a batch before it
// answers it, so such a wake-up could come on top of the answer's; the
// lab's context-switch counts did not show a difference either way). And
// Close does not wait for them.
func NewHost(st *Counters) (z *Sender, broken bool) {
	r, err := uring.NewFlags(ringEntries, uring.SetupCoopTaskrun)
	if errors.Is(err, syscall.EINVAL) {
		r, err = uring.New(ringEntries)
	}
	return newSender(r, err, func([]uint16) {}, st, true)
}

// newSender wraps the ring New or NewHost made (err: it could not).
func newSender(r *uring.Ring, err error, release func([]uint16), st *Counters, host bool) (*Sender, bool) {
	if err != nil {
		return nil, errors.Is(err, uring.ErrUnsupported)
	}
	return &Sender{ring: r, flags: uring.SendZCReportUsage, release: release, stats: st,
		cqCap: 2 * r.Entries(), rwFlags: uring.MsgDontWait, host: host}, false
}

// recSlots is the slot capacity a new record starts with.
const recSlots = 32

// ringEntries: one send is in flight at a time; the CQ (twice as many
// entries) bounds the notices outstanding, beyond which writes copy. A
// notice comes once the peer has acknowledged the send's bytes, so the
// bound should cover the sends of a round trip; a replica leg sends a
// batch per target poll pass at a queue depth of hundreds. 128 entries:
// 12 KiB of ring per connection, 255 notices. Counters.Full counts the
// sends refused at the bound: none in the lab's replperf runs of
// 2026-12-07 (how often the old bound of 63 was reached was not counted).
const ringEntries = 128

// Unusable: the kernel cannot send zero-copy.
func (z *Sender) Unusable() bool { return z.off.Load() }

// Copies: the kernel copies this connection's data anyway (see copying).
func (z *Sender) Copies() bool { return z.copying.Load() }

// CopiedProbe is how many notices decide whether the kernel copies a
// connection's zero-copy sends (Linux ≥ 6.2 says so in each notice).
const CopiedProbe = 16

// Send sends iov on the socket fd (non-blocking) zero-copy, under record
// *rec (0: allocate one). It returns the bytes sent or the errno;
// ErrOff says use writev.
func (z *Sender) Send(fd uintptr, iov []syscall.Iovec, rec *uint32) (int, syscall.Errno) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.closed && z.notes >= z.cqCap-1 {
		// Notices posted since the last send: only a send reaps them
		// while the connection is healthy, so one refused here must
		// look first, or the connection would copy from now on.
		z.reapLocked()
	}
	if z.closed || z.off.Load() {
		return 0, ErrOff
	}
	if z.notes >= z.cqCap-1 {
		// As many notices outstanding as the CQ holds (with this
		// send's completion): this write goes on copying.
		z.stats.Full.Add(1)
		return 0, ErrOff
	}
	if *rec == 0 {
		*rec = z.newRec()
	}
	for {
		z.msg.Iov = (*unix.Iovec)(unsafe.Pointer(&iov[0]))
		z.msg.SetIovlen(len(iov))
		sqe := uring.SQE{Opcode: uring.OpSendMsgZC, FD: int32(fd), Addr: uint64(uintptr(unsafe.Pointer(&z.msg))),
			Len: 1, RWFlags: z.rwFlags, IOPrio: z.flags, UserData: uint64(*rec)}
		if err := z.ring.Prepare(&sqe); err != nil {
			return 0, ErrOff // cannot happen: one send at a time, nothing left in the SQ
		}
		// From here a failure leaves it unknown whether bytes went out
		// (or whether the entry is still in the ring, to be issued with a
		// later call): the connection cannot go on. The sender stops for
		// good and the write fails.
		if _, err := z.ring.Submit(); err != nil {
			z.off.Store(true)
			return 0, syscall.EIO
		}
		res, ok := z.reapSend(*rec)
		if !ok {
			z.off.Store(true)
			return 0, syscall.EIO
		}
		if !z.probed && (res == -int32(syscall.EINVAL) || res == -int32(syscall.EOPNOTSUPP)) {
			z.settle()
			if res == -int32(syscall.EINVAL) && z.flags != 0 { // no IORING_SEND_ZC_REPORT_USAGE (< 6.2)
				z.flags = 0
				continue
			}
			// No IORING_OP_SENDMSG_ZC (< 6.1), or a socket without
			// zero-copy support (SOCK_SUPPORT_ZC: one accepted by an
			// MPTCP listener, for one).
			z.off.Store(true)
			return 0, ErrOff
		}
		z.probed = true
		if res < 0 {
			return 0, syscall.Errno(-res)
		}
		if res > 0 {
			z.stats.Sends.Add(1)
			z.stats.Bytes.Add(uint64(res))
		}
		return int(res), 0
	}
}

// settle waits for the notices of sends that sent nothing (a failed
// probe): they follow at once. mu held.
func (z *Sender) settle() {
	for z.notes > 0 {
		if err := z.ring.Wait(); err != nil {
			return
		}
		z.reapLocked()
	}
}

// sendWait bounds the wait for a send's completion, which the kernel
// posts inline (MSG_DONTWAIT fails a full socket with EAGAIN instead of
// parking the send): a kernel that parked it anyway must not hang the
// connection's writer. A variable for tests.
var sendWait = 5 * time.Second

// reapSend reaps until the completion of the send of record id is in
// and returns its result; a notice it announces is counted. ok=false: no
// completion within sendWait, or the ring failed. The send may then
// still be issued and read the write's memory: the record keeps one
// notice counted (lost) until its completion turns up, so its slots, and
// a closing sender, are held until the kernel is done (Seal, Close).
func (z *Sender) reapSend(id uint32) (res int32, ok bool) {
	var deadline time.Time // set at the first empty reap: never on the inline path
	for {
		n := z.ring.Reap(z.cqes[:])
		for i := range n {
			e := &z.cqes[i]
			if e.Flags&uring.CQENotif == 0 && uint32(e.UserData) == id {
				res, ok = e.Res, true
				if e.Flags&uring.CQEMore != 0 {
					// Counted before the notice, which may be next in
					// this batch.
					z.recs[id-1].notices++
					z.notes++
				}
				continue
			}
			z.note(e)
		}
		if ok {
			return
		}
		if n > 0 {
			continue
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(sendWait)
		}
		left := time.Until(deadline)
		if left <= 0 {
			z.stats.Overdue.Add(1)
			z.lost = id
			z.recs[id-1].notices++
			z.notes++
			return 0, false
		}
		if _, err := z.ring.WaitFor(left); err != nil {
			return 0, false
		}
	}
}

// note handles a notice (other completions, which cannot occur, are
// ignored).
func (z *Sender) note(e *uring.CQE) {
	id := uint32(e.UserData)
	if id == 0 || int(id) > len(z.recs) {
		return
	}
	if e.Flags&uring.CQENotif == 0 {
		if id == z.lost {
			// The overdue send's completion: a notice follows if it
			// sent anything (counted already), else none does.
			z.lost = 0
			if e.Flags&uring.CQEMore == 0 {
				z.noticeIn(id)
			}
		}
		return
	}
	z.seen++
	if uint32(e.Res)&uring.NotifUsageZCCopied != 0 {
		z.stats.Copied.Add(1)
		z.copied++
	}
	if z.seen == CopiedProbe && z.copied == z.seen && !AllowLoopback.Load() {
		z.copying.Store(true)
	}
	z.noticeIn(id)
}

// noticeIn counts in one notice of record id. mu held.
func (z *Sender) noticeIn(id uint32) {
	r := &z.recs[id-1]
	if r.notices <= 0 {
		return // no notice expected for it: not ours
	}
	r.notices--
	z.notes--
	if r.sealed && r.notices == 0 {
		z.finish(id)
	}
}

func (z *Sender) newRec() uint32 {
	if n := len(z.free); n > 0 {
		id := z.free[n-1]
		z.free = z.free[:n-1]
		return id
	}
	z.recs = append(z.recs, record{slots: make([]uint16, 0, recSlots)})
	return uint32(len(z.recs))
}

// Seal attaches the ended write's slots and small-PDU buffer to record
// id and returns the buffer the send path uses next. It reports whether
// the slots are held (false: every notice is already in, or none comes;
// the caller releases them and keeps its buffer).
func (z *Sender) Seal(id uint32, slots []uint16, out []byte) ([]byte, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	r := &z.recs[id-1]
	if r.notices == 0 {
		z.free = append(z.free, id)
		r.slots = r.slots[:0]
		return out, false
	}
	r.sealed = true
	r.slots = append(r.slots[:0], slots...)
	r.out = out
	if n := len(z.outs); n > 0 {
		next := z.outs[n-1]
		z.outs = z.outs[:n-1]
		return next[:0], true
	}
	return make([]byte, 0, cap(out)), true
}

// finish releases a sealed record whose notices are all in. mu held.
func (z *Sender) finish(id uint32) {
	r := &z.recs[id-1]
	z.release(r.slots)
	r.slots = r.slots[:0]
	z.outs = append(z.outs, r.out[:0])
	r.out, r.sealed = nil, false
	z.free = append(z.free, id)
}

// Reap handles the notices already posted, without blocking. Any
// goroutine.
func (z *Sender) Reap() {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.reapLocked()
}

func (z *Sender) reapLocked() {
	if z.closed {
		return
	}
	for {
		n := z.ring.Reap(z.cqes[:])
		for i := range n {
			z.note(&z.cqes[i])
		}
		if n < len(z.cqes) {
			return
		}
	}
}

// Pending is the number of notices still to come.
func (z *Sender) Pending() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.notes
}

// Wait blocks until a completion is posted or d passes, then reaps. It
// does not hold mu while it sleeps, so sends go on meanwhile (and may
// reap the notice it waited for: it then sleeps until the next one or
// d). One goroutine at a time waits, and never while Close runs (Close
// closes the ring): the target's reader, whose goroutine also closes.
func (z *Sender) Wait(d time.Duration) {
	z.mu.Lock()
	if z.closed || z.notes == 0 {
		z.mu.Unlock()
		return
	}
	z.mu.Unlock()
	_, _ = z.ring.WaitFor(d)
	z.Reap()
}

// Close ends zero-copy sending once the socket is closed: it waits up to
// d for the notices still to come (the socket's queued data is being
// acknowledged or dropped), then closes the ring. If notices are still
// outstanding the sender is abandoned: it keeps the memory the kernel may
// still read referenced, and a janitor goroutine reaps it until the
// kernel is done.
func (z *Sender) Close(d time.Duration) {
	if z.host {
		// Nothing is held: the kernel keeps the ring's state until the
		// last notice is in, and the pages pinned until it lets go.
		z.mu.Lock()
		if !z.closed {
			z.closed = true
			_ = z.ring.Close()
		}
		z.mu.Unlock()
		return
	}
	deadline := time.Now().Add(d)
	for z.Pending() > 0 && time.Now().Before(deadline) {
		z.Wait(time.Until(deadline))
	}
	z.mu.Lock()
	if z.closed {
		z.mu.Unlock()
		return
	}
	z.reapLocked()
	if z.notes > 0 {
		z.mu.Unlock()
		z.stats.Abandoned.Add(1)
		abandon(z) // janitor.mu, then each sender's mu: never the other way
		return
	}
	z.closed = true
	_ = z.ring.Close()
	z.mu.Unlock()
}

// The janitor holds abandoned senders: their connections are gone but
// the kernel may still send from their memory (a peer that stopped
// acknowledging: TCP keeps retransmitting for minutes). It reaps them
// every janitorEvery and lets each go (ring closed, memory free for the
// garbage collector) once its last notice is in.
var janitor struct {
	mu      sync.Mutex
	senders []*Sender
	running bool
}

const janitorEvery = time.Second

// abandon hands z (not closed; its mu not held) to the janitor.
func abandon(z *Sender) {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	janitor.senders = append(janitor.senders, z)
	if !janitor.running {
		janitor.running = true
		go runJanitor()
	}
}

func runJanitor() {
	t := time.NewTicker(janitorEvery)
	defer t.Stop()
	for range t.C {
		janitor.mu.Lock()
		kept := janitor.senders[:0]
		for _, z := range janitor.senders {
			z.mu.Lock()
			z.reapLocked()
			if z.notes == 0 {
				z.closed = true
				_ = z.ring.Close()
			} else {
				kept = append(kept, z)
			}
			z.mu.Unlock()
		}
		clear(janitor.senders[len(kept):])
		janitor.senders = kept
		if len(kept) == 0 {
			janitor.running = false
			janitor.mu.Unlock()
			return
		}
		janitor.mu.Unlock()
	}
}

// AbandonedSenders is how many Senders the janitor holds.
func AbandonedSenders() int {
	janitor.mu.Lock()
	defer janitor.mu.Unlock()
	return len(janitor.senders)
}
