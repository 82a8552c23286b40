package initiator

import (
	"errors"
	"sync"
	"sync/atomic"
)

// Request is one asynchronous block request over a byte range, for
// Session.Submit and Namespace.Submit: the multiplexed API that any number
// of goroutines may use at once. The layer splits it into NVMe commands of
// at most MaxTransfer bytes, spreads them over the I/O queues, and copies
// between Data and the queues' registered buffers (reads are copied only
// from a command that completed successfully) — unless Data lies in a
// MemRegion of the session, which the target then accesses directly (see
// the package doc: a failed zero-copy read leaves Data undefined).
//
// The caller fills the request fields, submits, and receives the same
// pointer on Done exactly once with the result fields set. Between the two
// the layer owns the Request and reads (writes) or fills (reads) Data: the
// caller must not touch either.
type Request struct {
	// Op is IORead, IOWrite, IOFlush, IOWriteZeroes or IODeallocate.
	Op IOOp
	// Off is the byte offset, a multiple of the block size.
	Off int64
	// Data is the read destination or the write source; its length is a
	// multiple of the block size. Ignored for other operations.
	Data []byte
	// Len is the byte length of IOWriteZeroes and IODeallocate (a
	// multiple of the block size). Ignored for other operations.
	Len int64
	// FUA asks for Force Unit Access on writes and write zeroes.
	FUA bool
	// Done receives the request when it completes. The layer sends from
	// a queue goroutine and must not block: the channel needs room for
	// every request outstanding on it (a full channel stalls a queue).
	// Ignored when Notify is set.
	Done chan *Request
	// Notify, when set, is called with the completed request in place of
	// a send on Done: for a consumer whose completion is itself a
	// non-blocking hand-off (ublk's completion ring), which then needs no
	// goroutine of its own receiving from Done.
	Notify Notifier
	// User is free for the caller (a tag); the layer does not touch it.
	User uint64
	// Queue places the request's commands: 0 spreads them round robin
	// over the I/O queues; q+1 puts them all on I/O queue q (modulo the
	// queue count), for a caller that keeps its own queue affinity (one
	// ublk queue per initiator queue). Replays keep the placement.
	Queue uint16

	// Err is nil on success, else the first failure: a *StatusError for
	// an NVMe error status, an error wrapping ErrControllerLost (and, for
	// a Session past its ctrl-loss timeout, syscall.EIO), ErrClosed,
	// ErrSessionClosed, or ErrInvalid / ErrUnaligned for a malformed
	// request.
	Err error
	// N is the number of bytes of Data known to be transferred before the
	// first failure: len(Data) on success (reads and writes only).
	N int

	// Set at submission.
	sess *Session // nil for Namespace.Submit (no replay)
	nsid uint32
	bs   int

	// pending counts commands not yet finished, plus one held by the
	// submitter while it splits the request.
	pending atomic.Int32

	errMu  sync.Mutex // guards failAt and err while commands fail (fail)
	failAt int
	err    error

	// first is the request's first command, inline: a request of one
	// command (a 4 KiB I/O) takes nothing from cmdPool. Its lifetime
	// ends with its finish, before the request's last release, so it is
	// free again whenever the caller may resubmit the request.
	first cmd
}

// Notifier receives completed Requests (Request.Notify). The initiator
// owns the contract: RequestDone is called exactly once per submitted
// request, from a queue goroutine, the session's replay goroutine, or
// the submitter itself (a request refused before any command was issued
// completes inside Submit). It must not block, must not call back into
// the layer with a lock the submitter holds, and should not allocate;
// the Request is the callee's from the call on.
type Notifier interface {
	RequestDone(r *Request)
}

// cmd is one NVMe command of a Request: the unit that queues execute and
// a Session replays.
type cmd struct {
	r      *Request
	op     IOOp
	fua    bool
	nsid   uint32
	lba    uint64
	blocks uint64 // 1-based; up to 2^32-1 for a deallocate range
	off    int    // byte offset of data within r.Data
	data   []byte // r.Data[off:off+blocks*bs] for reads and writes
	next   *cmd   // intake, local FIFO and replay list link
	// sub is the Submitter whose Submit routes the command (nil
	// otherwise): the queue takes it without waking its goroutine and the
	// Submitter's Flush issues it. Cleared when routed, so a replay of
	// the command wakes the queue as usual.
	sub *Submitter

	// last is the controller of the failed attempt (replay only).
	last *Controller
}

var cmdPool = sync.Pool{New: func() any { return new(cmd) }}

func getCmd() *cmd { return cmdPool.Get().(*cmd) }

func putCmd(c *cmd) {
	*c = cmd{}
	cmdPool.Put(c)
}

// start validates r for a namespace of block size bs and readies its
// result fields. It returns the number of blocks and the first LBA.
func (r *Request) start(bs int) (lba, blocks uint64, err error) {
	r.Err, r.N, r.err, r.failAt = nil, 0, nil, -1
	r.pending.Store(1)
	r.bs = bs
	if bs <= 0 {
		return 0, 0, ErrNotSupported
	}
	var n int64
	switch r.Op {
	case IORead, IOWrite:
		n = int64(len(r.Data))
	case IOWriteZeroes, IODeallocate:
		n = r.Len
	case IOFlush:
		return 0, 1, nil
	default:
		return 0, 0, ErrInvalid
	}
	if r.Off < 0 || n < 0 || r.Off%int64(bs) != 0 || n%int64(bs) != 0 {
		return 0, 0, ErrUnaligned
	}
	return uint64(r.Off) / uint64(bs), uint64(n) / uint64(bs), nil
}

// cmdRouter takes a command for execution (a Controller's queues, or a
// Session's replay list). It never blocks; a command it cannot take is
// finished with an error.
type cmdRouter interface {
	route(c *cmd)
}

// split cuts the request's blocks [lba, lba+blocks) into commands of at
// most per blocks and hands each to rt. The request holds one pending
// reference through the loop, dropped by the caller (r.release).
func (r *Request) split(lba, blocks, per uint64, rt cmdRouter, sub *Submitter) {
	if per == 0 {
		per = 1
	}
	at := lba
	for blocks > 0 {
		n := min(blocks, per)
		var c *cmd
		if at == lba {
			c = &r.first
			*c = cmd{}
		} else {
			c = getCmd()
		}
		r.fillCmd(c, at, n, lba)
		c.sub = sub
		r.pending.Add(1)
		rt.route(c)
		at += n
		blocks -= n
	}
}

// newCmd makes a pooled command for blocks [at, at+n) of a request
// starting at block base.
func (r *Request) newCmd(at, n, base uint64) *cmd {
	c := getCmd()
	r.fillCmd(c, at, n, base)
	return c
}

// fillCmd sets a zeroed command up for blocks [at, at+n) of a request
// starting at block base.
func (r *Request) fillCmd(c *cmd, at, n, base uint64) {
	c.r, c.op, c.fua, c.nsid, c.lba, c.blocks = r, r.Op, r.FUA, r.nsid, at, n
	if r.Op == IORead || r.Op == IOWrite {
		c.off = int(at-base) * r.bs
		c.data = r.Data[c.off : c.off+int(n)*r.bs]
	}
}

// fail records err for the command at byte offset at of Data.
func (r *Request) fail(at int, err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	if r.failAt < 0 || at < r.failAt {
		r.failAt = at
	}
	r.errMu.Unlock()
}

// release drops one pending reference; the last one completes the
// request: Notify, else a send on Done.
func (r *Request) release() {
	if r.pending.Add(-1) != 0 {
		return
	}
	// No lock: every fail happened before its command's release, and
	// this last Add observed all of those (sync/atomic operations are
	// sequentially consistent), so nothing writes err or failAt any
	// more.
	r.Err = r.err
	if r.Op == IORead || r.Op == IOWrite {
		r.N = len(r.Data)
		if r.err != nil {
			r.N = max(r.failAt, 0)
		}
	}
	if r.sess != nil {
		r.sess.inFlight.Add(-1)
		r.sess.completed.Add(1)
	}
	if n := r.Notify; n != nil {
		n.RequestDone(r)
		return
	}
	r.Done <- r
}

// abort completes a request that was never split with err.
func (r *Request) abort(err error) {
	r.fail(0, err)
	r.release()
}

// done is called by a queue goroutine (or a submitter that could not
// route the command) with the command's result. A Session replays path
// failures; everything else finishes the command.
func (c *cmd) done(err error) {
	if s := c.r.sess; err != nil && s != nil {
		if s.replayable(err) {
			s.replay(c, err)
			return
		}
		if s.isShut.Load() && errors.Is(err, ErrClosed) {
			err = ErrSessionClosed
		}
	}
	c.finish(err)
}

// finish ends the command with err (nil: success) without replay.
func (c *cmd) finish(err error) {
	r, off := c.r, c.off
	if c != &r.first {
		putCmd(c)
	}
	if err != nil {
		r.fail(off, err)
	}
	r.release()
}
