package replica

import (
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev"
)

// RegisterFixed registers region with the session (initiator
// Session.RegisterBuffer): over RDMA, on every controller of every path,
// now and after reconnects, so that writes whose buffer lies inside it
// are sent zero copy — the replica RDMA-READs them straight from region
// (the same registered buffer the owner's target received the host's
// data in). Over NVMe/TCP nothing is registered: writes are sent from
// the buffer and reads are copied (initiator). It
// may block (memory registration) and fails with an error wrapping
// blockdev.ErrFixedUnavailable when the leg is closed or the memory
// cannot be registered (it overlaps another registration, the provider
// refused); the caller then uses SubmitRead / SubmitWrite, which work on
// any memory.
func (l *Leg) RegisterFixed(region []byte) (blockdev.FixedRegion, error) {
	if l.closeBeg.Load() {
		return 0, fmt.Errorf("%w: %w", blockdev.ErrFixedUnavailable, l.errClosed())
	}
	m, err := l.s.RegisterBuffer(region)
	if err != nil {
		return 0, fmt.Errorf("%w: replica %s: %w", blockdev.ErrFixedUnavailable, l.cfg.SubNQN, err)
	}
	l.fixMu.Lock()
	defer l.fixMu.Unlock()
	l.nextReg++
	l.regs[l.nextReg] = m
	return l.nextReg, nil
}

// UnregisterFixed deregisters reg once no I/O of the leg is in flight
// (including writes the watchdog already failed whose requests the
// session still holds): it blocks until then, at most about IOTimeout
// plus a controller shutdown. Unknown handles are ignored. It must not be
// called from a Completion's IODone (it waits for the goroutine that
// calls IODone).
func (l *Leg) UnregisterFixed(reg blockdev.FixedRegion) {
	l.fixMu.Lock()
	m := l.regs[reg]
	delete(l.regs, reg)
	l.fixMu.Unlock()
	if m == nil {
		return
	}
	l.drain(func() { _ = m.Close() })
}

// SubmitReadFixed is SubmitRead: the session finds the registration of
// buf by its address.
func (l *Leg) SubmitReadFixed(buf []byte, lba uint64, _ blockdev.FixedRegion, done blockdev.Completion) bool {
	return l.SubmitRead(buf, lba, done)
}

// SubmitWriteFixed is SubmitWrite: the session finds the registration of
// buf by its address and sends it zero copy.
func (l *Leg) SubmitWriteFixed(buf []byte, lba uint64, flags blockdev.WriteFlags, _ blockdev.FixedRegion, done blockdev.Completion) bool {
	return l.SubmitWrite(buf, lba, flags, done)
}
