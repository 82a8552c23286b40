package tcp

import (
	"time"

	"github.com/rdmablk/rdmablk/internal/tcpzc"
)

// Zero-copy sends, the connection's side (the sender is internal/tcpzc).

// zcSlotWait bounds how long the reader waits for a notice when every
// slot is free but for those zero-copy sends hold (the host already has
// their responses): the peer's acknowledgement comes within a round trip,
// usually with the command that needs the slot.
const zcSlotWait = 10 * time.Second

// zeroCopy reports whether a write carrying n bytes of read data goes out
// zero-copy, creating the connection's sender at the first such write.
// Token holder only.
func (c *conn) zeroCopy(n int) bool {
	min := c.l.cfg.ZeroCopySendMin
	if min <= 0 || n < min || c.zcLocal || !c.zcIO.Load() || !c.snd.sock.zcAllowed() {
		return false
	}
	if c.snd.sock.zc == nil {
		if c.zcTried || c.l.zcBroken.Load() {
			return false
		}
		c.zcTried = true
		// Not after zcClose: nothing would close the ring.
		c.zcMu.Lock()
		defer c.zcMu.Unlock()
		if c.zcDone {
			return false
		}
		z, broken := tcpzc.New(c.zcRelease, &c.l.stats.zc)
		if z == nil {
			if broken {
				c.l.zcUnavailable()
			}
			return false
		}
		c.snd.sock.zc = z
		c.zc.Store(z)
	}
	if z := c.snd.sock.zc; z.Unusable() {
		c.l.zcUnavailable()
		return false
	} else if z.Copies() {
		return false
	}
	return true
}

// zcHold seals record id of the write that just ended: the slots of its
// responses are held until the notices are in (true), or, when they are
// all in already, left to the caller to release (false). It counts them
// in zcHeld before the caller clears inWrite, so the reader never counts
// a response the host may have as outstanding. Token holder only.
func (c *conn) zcHold(id uint32) bool {
	w := &c.snd
	w.zcSlots = w.zcSlots[:0]
	for _, j := range w.batch {
		if j.kind == jobResp {
			w.zcSlots = append(w.zcSlots, j.idx)
		}
	}
	k := int32(len(w.zcSlots))
	c.zcHeld.Add(k)
	out, held := w.sock.zc.Seal(id, w.zcSlots, w.out)
	w.out = out
	if !held {
		c.zcHeld.Add(-k)
	}
	return held
}

// zcRelease returns the slots of a zero-copy write whose notices are all
// in: to the free list first, then out of zcHeld (the reader's count may
// fall short meanwhile, never exceed). Any goroutine, under the sender's
// lock.
func (c *conn) zcRelease(slots []uint16) {
	for _, idx := range slots {
		c.release(idx)
	}
	c.zcHeld.Add(-int32(len(slots)))
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

// zcSlot waits for a slot while zero-copy sends hold some: it reaps their
// notices, sleeping until one is posted, for at most zcSlotWait. Reader
// only.
func (c *conn) zcSlot() (uint16, bool) {
	z := c.zc.Load()
	if z == nil {
		return 0, false
	}
	// The batch's held-back I/O and responses go out first: they must
	// not wait with the reader (their sends reap notices too).
	c.endBatch()
	deadline := time.Now().Add(zcSlotWait)
	for {
		// zcHeld before the pop: a release between the two shows in
		// the pop (slots are freed before zcHeld drops).
		held := c.zcHeld.Load()
		z.Reap()
		if idx, ok := c.free.pop(); ok {
			return idx, true
		}
		if held == 0 || !time.Now().Before(deadline) {
			return 0, false
		}
		z.Wait(time.Until(deadline))
	}
}

// zcClose ends the connection's zero-copy sending (serve's end, the
// socket closed): see tcpzc.Sender.Close.
func (c *conn) zcClose() {
	c.zcMu.Lock()
	c.zcDone = true
	c.zcMu.Unlock()
	if z := c.zc.Load(); z != nil {
		z.Close(tcpzc.CloseWait)
	}
}
