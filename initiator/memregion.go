package initiator

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs/regmem"
)

// MemRegion is caller memory registered with a Session for zero-copy
// requests (Session.RegisterBuffer): every read or write command of a
// Request whose Data lies inside it is transferred by RDMA straight from
// or into that memory — the command's keyed SGL names the caller's bytes
// and no bounce copy through a queue's buffer pool happens. The
// registration follows the session's controllers: each controller of
// each path registers the memory on its own protection domain when it
// connects (before it carries I/O, so replays find it) and deregisters it
// when it closes.
//
// The memory must stay valid and must not move until Close returns (on
// hardware providers it must lie outside the Go heap: anonymous mmap, as
// verbs/regmem allocates).
type MemRegion struct {
	s          *Session
	buf        []byte
	base, end  uintptr
	registered atomic.Bool // false once Close ran
}

// Bytes returns the registered memory.
func (m *MemRegion) Bytes() []byte { return m.buf }

// extMR is a MemRegion registered on one controller's protection domain.
type extMR struct {
	m         *MemRegion
	base, end uintptr
	reg       *regmem.Registration
}

// RegisterBuffer registers buf with every controller of the session, now
// and after every reconnect, for zero-copy requests (see MemRegion). Any
// goroutine; it blocks while the memory is registered (a system call per
// memory region on hardware providers). It fails with ErrInvalid for an
// empty buffer or one that overlaps a registered MemRegion, with
// ErrSessionClosed after Close, and with the provider's error when a live
// controller cannot register it (then nothing stays registered). A
// controller that connects later and cannot register it logs a warning
// and serves the region's requests through the copy path.
func (s *Session) RegisterBuffer(buf []byte) (*MemRegion, error) {
	if len(buf) == 0 {
		return nil, fmt.Errorf("%w: register an empty buffer", ErrInvalid)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	m := &MemRegion{s: s, buf: buf, base: base, end: base + uintptr(len(buf))}
	if m.end < m.base {
		return nil, fmt.Errorf("%w: buffer wraps the address space", ErrInvalid)
	}
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.isShut.Load() {
		return nil, ErrSessionClosed
	}
	for _, o := range s.regs {
		if m.base < o.end && o.base < m.end {
			return nil, fmt.Errorf("%w: buffer overlaps a registered region", ErrInvalid)
		}
	}
	var done []*Controller
	for c := range s.regCtrls {
		if err := c.extAdd(m); err != nil {
			for _, d := range done {
				d.extRemove(m)
			}
			return nil, fmt.Errorf("initiator: register %d-byte buffer on controller %d (%s): %w", len(buf), c.cntlid, c.addr, err)
		}
		done = append(done, c)
	}
	s.regs = append(s.regs, m)
	m.registered.Store(true)
	return m, nil
}

// Close deregisters the region from every controller. The caller
// guarantees that no Request whose Data lies in the region is submitted
// or in flight (received from Done before). Later requests on the memory
// go through the copy path. Idempotent; any goroutine; it blocks while
// the memory regions are deregistered.
func (m *MemRegion) Close() error {
	s := m.s
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if !m.registered.Swap(false) {
		return nil
	}
	for i, o := range s.regs {
		if o == m {
			s.regs = append(s.regs[:i:i], s.regs[i+1:]...)
			break
		}
	}
	var errs []error
	for c := range s.regCtrls {
		if err := c.extRemove(m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attachRegions registers every MemRegion of the session on a newly
// connected controller c and lets later RegisterBuffer calls reach it.
// The path goroutine calls it before it publishes c, so no command of c
// misses a region that was registered before. A region that c cannot
// register is logged and served by the copy path.
func (s *Session) attachRegions(c *Controller) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	for _, m := range s.regs {
		if err := c.extAdd(m); err != nil {
			s.log.Warn("register buffer on new controller; its requests are copied", "addr", c.addr, "cntlid", c.cntlid, "bytes", len(m.buf), "err", err)
		}
	}
	if s.regCtrls == nil {
		s.regCtrls = make(map[*Controller]struct{})
		s.statCtrls = make(map[*Controller]struct{})
	}
	s.regCtrls[c] = struct{}{}
	s.statCtrls[c] = struct{}{}
}

// detachRegions stops RegisterBuffer and MemRegion.Close from touching c
// (called before c closes; its teardown deregisters what it holds).
func (s *Session) detachRegions(c *Controller) {
	s.regMu.Lock()
	delete(s.regCtrls, c)
	s.regMu.Unlock()
}

// retireStats folds the copy counters of a closed controller into the
// session's (after c.Close, so they are final).
func (s *Session) retireStats(c *Controller) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if _, ok := s.statCtrls[c]; !ok {
		return
	}
	delete(s.statCtrls, c)
	cp, zc := c.copyStats()
	s.copiedBytes += cp
	s.zeroCopyBytes += zc
}

// copyStats is the session's copied and zero-copy byte counts: retired
// controllers' plus live ones'.
func (s *Session) copyStats() (copied, zero uint64) {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	copied, zero = s.copiedBytes, s.zeroCopyBytes
	for c := range s.statCtrls {
		cp, zc := c.copyStats()
		copied += cp
		zero += zc
	}
	return copied, zero
}

// extAdd registers m on c's protection domain. Session.regMu held (it
// serialises every writer of c.ext).
func (c *Controller) extAdd(m *MemRegion) error {
	if c.tr == TransportTCP {
		// Nothing to register: NVMe/TCP copies data to and from the
		// socket, so the region's commands take the copy path.
		return nil
	}
	if c.pd == nil {
		return ErrClosed
	}
	limit := uint64(maxMRChunk)
	if c.maxMR > 0 && c.maxMR < limit {
		limit = c.maxMR
	}
	reg, err := regmem.Register(c.pd, m.buf, int(limit), poolAccess)
	if err != nil {
		return err
	}
	var old []extMR
	if t := c.ext.Load(); t != nil {
		old = *t
	}
	t := make([]extMR, 0, len(old)+1)
	t = append(append(t, old...), extMR{m: m, base: m.base, end: m.end, reg: reg})
	c.ext.Store(&t)
	return nil
}

// extRemove deregisters m from c. Session.regMu held.
func (c *Controller) extRemove(m *MemRegion) error {
	p := c.ext.Load()
	if p == nil {
		return nil
	}
	t := make([]extMR, 0, len(*p))
	var gone *regmem.Registration
	for _, e := range *p {
		if e.m == m {
			gone = e.reg
			continue
		}
		t = append(t, e)
	}
	if gone == nil {
		return nil
	}
	c.ext.Store(&t)
	return gone.Close()
}

// extClose deregisters every region of c (teardown, after its QPs are
// destroyed and before its protection domain closes).
func (c *Controller) extClose() error {
	p := c.ext.Swap(nil)
	if p == nil {
		return nil
	}
	var errs []error
	for _, e := range *p {
		if err := e.reg.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// extBuffer fills b with a registered view of data when data lies in one
// memory region of a MemRegion registered on c. Queue goroutines call it
// per read or write command: one atomic load and a scan of the (short)
// region table, no allocation.
func (c *Controller) extBuffer(data []byte, b *Buffer) bool {
	p := c.ext.Load()
	if p == nil || len(data) == 0 {
		return false
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	n := uintptr(len(data))
	for i := range *p {
		e := &(*p)[i]
		if a < e.base || a >= e.end || n > e.end-a {
			continue
		}
		addr, lkey, rkey, ok := e.reg.Span(int(a-e.base), len(data))
		if !ok { // spans two memory regions
			return false
		}
		*b = Buffer{b: data, addr: addr, lkey: lkey, rkey: rkey, ext: true}
		return true
	}
	return false
}

// copyStats sums the bytes the controller's queues copied between
// Request data and pool buffers, and those moved zero-copy.
func (c *Controller) copyStats() (copied, zero uint64) {
	for _, m := range c.muxes {
		copied += m.copied.Load()
		zero += m.zeroCopy.Load()
	}
	return copied, zero
}
