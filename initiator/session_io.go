package initiator

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// pathTable is the Session's immutable view of where I/O goes, read with
// one atomic load per request and replaced (never modified) by
// rebuildTable on every path change: connect, loss, ANA change, close.
type pathTable struct {
	// best is the path I/O uses now; nil when no path is usable.
	best *pathEntry
	// Namespace geometry (zero until a path connected once).
	nsid uint32
	bs   int
	size int64
}

// pathEntry is a usable path frozen at rebuild time.
type pathEntry struct {
	p    *path
	ctrl *Controller
	ns   *Namespace
}

// rebuildTable publishes a new path table from the paths' state. s.mu
// held.
func (s *Session) rebuildTable() {
	t := &pathTable{nsid: s.nsid, bs: s.bs, size: s.size}
	if !s.closed {
		if best := s.bestLocked(); best != nil {
			t.best = &pathEntry{p: best, ctrl: best.ctrl, ns: best.ns}
		}
	}
	s.table.Store(t)
}

// bestLocked is the path I/O should use: live, ANA optimized before
// non-optimized, earlier in Paths first; nil when none is usable. s.mu
// held.
func (s *Session) bestLocked() *path {
	var best *path
	for _, p := range s.paths {
		if p.state != PathLive || !p.ana.usable() || p.ctrl == nil || p.ctrl.isDead() {
			continue
		}
		if best == nil || best.ana != nvme.ANAStateOptimized && p.ana == nvme.ANAStateOptimized {
			best = p
		}
	}
	return best
}

// Submit starts r on the session: its commands go to the best path's
// I/O queues (read from the path table without a lock), and each command
// that fails because of its path is replayed (see Session). r comes back
// on r.Done (or through r.Notify) exactly once. Any goroutine, any number at once; it never
// blocks. After CtrlLossTimeout without a path, r fails at once with an
// error wrapping ErrControllerLost and syscall.EIO. It returns ErrInvalid
// (and does not complete r) only when r is nil or has neither Done nor
// Notify.
func (s *Session) Submit(r *Request) error {
	if r == nil || r.Done == nil && r.Notify == nil {
		return fmt.Errorf("%w: request without a Done channel or Notify", ErrInvalid)
	}
	s.submit(r)
	return nil
}

func (s *Session) submit(r *Request) { s.submitVia(r, nil) }

// submitVia is submit; with sub, the commands routed to a controller
// wait in their queue's intake for sub.Flush.
func (s *Session) submitVia(r *Request, sub *Submitter) {
	t := s.table.Load()
	lba, blocks, err := r.start(t.bs)
	r.sess, r.nsid = s, t.nsid
	s.inFlight.Add(1)
	if err == nil && s.isShut.Load() {
		err = ErrSessionClosed
	}
	e := t.best
	if e != nil && e.ctrl.isDead() {
		e = nil
	}
	if err == nil {
		if e != nil {
			err = e.ns.check(r.Op, lba, blocks)
		} else if end := lba + blocks; r.Op != IOFlush && (end < lba || end > uint64(t.size)/uint64(t.bs)) {
			err = &StatusError{Op: r.Op.String(), Status: nvme.StatusLBAOutOfRange}
		}
	}
	if err == nil && e == nil {
		err = s.lossErr()
	}
	if err != nil {
		r.abort(err)
		return
	}
	switch {
	case blocks == 0:
	case e != nil:
		r.split(lba, blocks, maxBlocksPerCommand(r.Op, t.bs, e.ctrl.maxTransfer), e.ctrl, sub)
	default: // no path now: the commands wait for one
		r.split(lba, blocks, maxBlocksPerCommand(r.Op, t.bs, DefaultMaxTransfer), s, nil)
	}
	r.release()
}

// lossErr is the error for a request that finds no usable path: nil while
// the session may still reconnect within CtrlLossTimeout.
func (s *Session) lossErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	return s.expiredLocked()
}

// expiredLocked is the ctrl-loss error once no path has been live for
// CtrlLossTimeout, else nil. s.mu held.
func (s *Session) expiredLocked() error {
	if s.opts.CtrlLossTimeout <= 0 || s.downSince.IsZero() {
		return nil
	}
	if down := time.Since(s.downSince); down >= s.opts.CtrlLossTimeout {
		return fmt.Errorf("%w: %w: no path to %s for %v (ctrl-loss-tmo %v)",
			ErrControllerLost, syscall.EIO, s.opts.SubNQN, down.Round(time.Millisecond), s.opts.CtrlLossTimeout)
	}
	return nil
}

// replayable reports whether err is a path failure worth replaying.
func (s *Session) replayable(err error) bool {
	if errors.Is(err, ErrControllerLost) || isPathError(err) || isAbortedByTeardown(err) {
		return true
	}
	// A controller closed by its path goroutine under the command.
	return errors.Is(err, ErrClosed) && !s.isShut.Load()
}

// replay takes a command whose attempt failed with the path failure err.
// Called by a queue goroutine; it does not block.
func (s *Session) replay(x *cmd, err error) {
	s.replays.Add(1)
	if isPathError(err) && x.last != nil {
		s.markPathError(x.last)
	}
	s.route(x)
}

// route puts x on the replay list, where it waits for a usable path
// (cmdRouter for requests submitted while no path is usable).
func (s *Session) route(x *cmd) {
	x.sub = nil
	s.rmu.Lock()
	if s.rclosed {
		s.rmu.Unlock()
		x.finish(ErrSessionClosed)
		return
	}
	x.next = nil
	if s.rtail == nil {
		s.rhead = x
	} else {
		s.rtail.next = x
	}
	s.rtail = x
	s.rmu.Unlock()
	select {
	case s.rwake <- struct{}{}:
	default:
	}
}

// markPathError stops I/O to the path of controller c after an ANA or
// path status, until its ANA log says otherwise.
func (s *Session) markPathError(c *Controller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.paths {
		if p.ctrl == c && p.ana.usable() {
			p.ana = nvme.ANAStateInaccessible // until re-read
			p.changed = time.Now()
			s.broadcast()
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
	}
}

// replayLoop is the session's replay goroutine: it sends every command on
// the replay list to the best path, waiting for one (pick) when there is
// none, and fails them all with the pick error once CtrlLossTimeout has
// passed without a path, or with ErrSessionClosed at Close.
func (s *Session) replayLoop() {
	defer s.wg.Done()
	for {
		var waited *Controller // a live controller this batch already waited for
		s.rmu.Lock()
		list := s.rhead
		s.rhead, s.rtail = nil, nil
		s.rmu.Unlock()
		if list == nil {
			select {
			case <-s.rwake:
				continue
			case <-s.done:
			}
			s.rmu.Lock()
			s.rclosed = true
			list = s.rhead
			s.rhead, s.rtail = nil, nil
			s.rmu.Unlock()
			finishAll(list, ErrSessionClosed)
			return
		}
		for list != nil {
			_, ns, err := s.pick()
			if err != nil {
				finishAll(list, err)
				break
			}
			c := ns.c
			if list.last == c && waited != c && !c.isDead() {
				// It failed on this controller, which is still up (a
				// draining target, an aborted queue): give it until
				// it goes or ReconnectDelay passes, then pick again.
				waited = c
				t := time.NewTimer(s.opts.ReconnectDelay)
				select {
				case <-c.Done():
				case <-s.done:
				case <-t.C:
				}
				t.Stop()
				continue
			}
			for list != nil {
				x := list
				list = x.next
				x.next, x.last = nil, nil
				c.route(x)
			}
		}
	}
}

// finishAll finishes every command of a list with err.
func finishAll(list *cmd, err error) {
	for list != nil {
		x := list
		list = x.next
		x.finish(err)
	}
}

// ReadAt reads len(p) bytes at off (see Namespace.ReadAt); each command
// is replayed after path failures.
func (s *Session) ReadAt(p []byte, off int64) (int, error) {
	t := s.table.Load()
	if t.bs > 0 && (off < 0 || off%int64(t.bs) != 0 || len(p)%t.bs != 0) {
		return 0, fmt.Errorf("%w: offset %d length %d, block size %d", ErrUnaligned, off, len(p), t.bs)
	}
	if off >= t.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	want := p
	if int64(len(p)) > t.size-off {
		want = p[:t.size-off]
	}
	n, err := blocking(s, IORead, off, want, 0, false)
	if err == nil && len(want) < len(p) {
		err = io.EOF
	}
	return n, err
}

// WriteAt writes p at off (see Namespace.WriteAt); each command is
// replayed after path failures.
func (s *Session) WriteAt(p []byte, off int64) (int, error) {
	return blocking(s, IOWrite, off, p, 0, false)
}

// WriteFUA writes p at off with Force Unit Access.
func (s *Session) WriteFUA(p []byte, off int64) error {
	_, err := blocking(s, IOWrite, off, p, 0, true)
	return err
}

// Flush makes completed writes durable. After a failover it flushes the
// path it runs on, which for two targets exporting one volume covers
// only what that target holds: such targets must share the media.
func (s *Session) Flush() error {
	_, err := blocking(s, IOFlush, 0, nil, 0, false)
	return err
}

// Deallocate trims length bytes at off.
func (s *Session) Deallocate(off, length int64) error {
	_, err := blocking(s, IODeallocate, off, nil, length, false)
	return err
}

// WriteZeroes zeroes length bytes at off.
func (s *Session) WriteZeroes(off, length int64) error {
	_, err := blocking(s, IOWriteZeroes, off, nil, length, false)
	return err
}

// SessionStats is a snapshot of a session's I/O counters.
type SessionStats struct {
	// InFlight is the number of requests in progress (including those
	// waiting for a path).
	InFlight int64
	// Replays counts NVMe commands replayed after a path failure.
	Replays uint64
	// Requests counts requests completed (with or without error) since
	// the session opened, blocking calls included.
	Requests uint64
	// Commands counts NVMe commands completed on the current path's
	// controller (restarts at 0 on reconnect).
	Commands uint64
	// Queues is the current path's I/O queue count, QueueDepth their
	// depth, and QueueInFlight the commands in each of its queues' slot
	// tables.
	Queues        int
	QueueDepth    int
	QueueInFlight []int
	// CopiedBytes counts bytes the CPU copied between Request data and
	// the queues' registered pool buffers (write data before every
	// attempt, read data after a successful one) since the session
	// opened: the copy path of requests outside any MemRegion, and of
	// every NVMe/TCP read.
	CopiedBytes uint64
	// ZeroCopyBytes counts bytes of successful read and write commands
	// that RDMA moved straight from or into a MemRegion, and of NVMe/TCP
	// writes, which are sent from the Request's data (no copy into a pool
	// buffer).
	ZeroCopyBytes uint64
}

// Stats returns the session's counters. Any goroutine; it does not block
// on I/O.
func (s *Session) Stats() SessionStats {
	st := SessionStats{InFlight: s.inFlight.Load(), Replays: s.replays.Load(), Requests: s.completed.Load()}
	st.CopiedBytes, st.ZeroCopyBytes = s.copyStats()
	if e := s.table.Load().best; e != nil {
		qs := e.ctrl.QueueStats()
		st.Queues = len(qs)
		if len(qs) > 0 {
			st.QueueDepth = qs[0].Depth
		}
		st.QueueInFlight = make([]int, len(qs))
		for i, q := range qs {
			st.Commands += q.Completed
			st.QueueInFlight[i] = q.InFlight
		}
	}
	return st
}
