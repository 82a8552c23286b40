package faulty

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmablk/rdmablk/blockdev"
)

// Op is a set of Backend operations a rule applies to.
type Op uint8

const (
	OpRead Op = 1 << iota
	OpWrite
	OpFlush
	OpWriteZeroes
	OpDiscard

	// OpAll is every operation above.
	OpAll = OpRead | OpWrite | OpFlush | OpWriteZeroes | OpDiscard
)

// String lists the operations, e.g. "read|write".
func (o Op) String() string {
	names := []string{"read", "write", "flush", "write-zeroes", "discard"}
	var parts []string
	for i, n := range names {
		if o&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if rest := o &^ OpAll; rest != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint8(rest)))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Rule describes which calls to disturb and how.
type Rule struct {
	// Ops the rule applies to; 0 means OpAll.
	Ops Op
	// LBA and Blocks: the rule applies to calls whose range overlaps
	// [LBA, LBA+Blocks). Blocks == 0 means the whole device. Flush has no
	// range and always overlaps.
	LBA, Blocks uint64
	// Every: act on every Every-th matching call (the Every-th, 2*Every-th,
	// ...); 0 and 1 mean every matching call.
	Every uint64
	// Times: act at most this many times; 0 means without limit.
	Times uint64
	// Err is what an acting call returns. Nil means blockdev.ErrMedium,
	// except for a rule with Hold, whose calls then proceed normally once
	// released (a pure stall).
	Err error
	// After: run the call on the inner backend first and return Err only
	// if it succeeded (a write that landed but is reported failed).
	After bool
	// Hold, if set, makes an acting call wait until Hold is closed or
	// yields a value.
	Hold <-chan struct{}
	// Notify, if set, is sent one value each time the rule acts, before
	// the call waits on Hold or fails. The send blocks: give the channel a
	// buffer or a reader.
	Notify chan<- Op
}

// RuleID names an installed rule.
type RuleID uint64

// rule is an installed Rule and its counters.
type rule struct {
	Rule
	id    RuleID
	seen  atomic.Uint64 // matching calls
	fired atomic.Uint64 // calls acted on
}

// Backend is a fault-injecting wrapper. Create it with New.
type Backend struct {
	inner blockdev.Backend
	rules atomic.Pointer[[]*rule] // copy on write; nil or empty: no rules

	mu     sync.Mutex // serialises rule changes and guards nextID
	nextID RuleID
}

var (
	_ blockdev.Backend     = (*Backend)(nil)
	_ blockdev.NonBlocking = (*Backend)(nil)
)

// New wraps inner, with no rules installed.
func New(inner blockdev.Backend) *Backend {
	return &Backend{inner: inner}
}

// Inner returns the wrapped backend.
func (b *Backend) Inner() blockdev.Backend { return b.inner }

// Inject installs r after the rules already installed and returns its id.
// Rules are consulted in installation order; the first one that acts on a
// call decides what happens to it, and later rules do not see that call.
func (b *Backend) Inject(r Rule) RuleID {
	if r.Ops == 0 {
		r.Ops = OpAll
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextID++
	nr := &rule{Rule: r, id: b.nextID}
	var next []*rule
	if cur := b.rules.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, nr)
	b.rules.Store(&next)
	return nr.id
}

// Remove uninstalls rule id; unknown ids are ignored. Calls already held
// by the rule stay held until its Hold channel releases them.
func (b *Backend) Remove(id RuleID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cur := b.rules.Load()
	if cur == nil {
		return
	}
	var next []*rule
	for _, r := range *cur {
		if r.id != id {
			next = append(next, r)
		}
	}
	if len(next) == 0 {
		b.rules.Store(nil)
		return
	}
	b.rules.Store(&next)
}

// Clear uninstalls every rule.
func (b *Backend) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rules.Store(nil)
}

// Fired returns how many calls rule id has acted on (0 for unknown or
// removed rules).
func (b *Backend) Fired(id RuleID) uint64 {
	if cur := b.rules.Load(); cur != nil {
		for _, r := range *cur {
			if r.id == id {
				return r.fired.Load()
			}
		}
	}
	return 0
}

// BlockSize returns the inner backend's block size.
func (b *Backend) BlockSize() int { return b.inner.BlockSize() }

// Blocks returns the inner backend's capacity.
func (b *Backend) Blocks() uint64 { return b.inner.Blocks() }

// NonBlocking reports whether the inner backend is non-blocking and no
// installed rule can stall a call. The target reads it when it sets up a
// namespace, so install stalling rules before that.
func (b *Backend) NonBlocking() bool {
	nb, ok := b.inner.(blockdev.NonBlocking)
	if !ok || !nb.NonBlocking() {
		return false
	}
	if cur := b.rules.Load(); cur != nil {
		for _, r := range *cur {
			if r.Hold != nil {
				return false
			}
		}
	}
	return true
}

// pick returns the rule that acts on a call of kind op over [lba, lba+n),
// or nil. ranged is false for Flush. Calls the inner backend will reject
// (out of range, partial blocks) are never acted on, so they get the
// inner backend's error.
func (b *Backend) pick(op Op, lba, n uint64, ranged bool) *rule {
	cur := b.rules.Load()
	if cur == nil {
		return nil
	}
	if ranged && !blockdev.RangeOK(lba, n, b.inner.Blocks()) {
		return nil // the inner backend rejects it, as a device checks ranges before media
	}
	for _, r := range *cur {
		if r.Ops&op == 0 || ranged && !overlaps(lba, n, r.LBA, r.Blocks) {
			continue
		}
		if seen := r.seen.Add(1); r.Every > 1 && seen%r.Every != 0 {
			continue
		}
		if !r.claim() {
			continue
		}
		return r
	}
	return nil
}

// claim counts one action, unless Times is used up.
func (r *rule) claim() bool {
	for {
		f := r.fired.Load()
		if r.Times != 0 && f >= r.Times {
			return false
		}
		if r.fired.CompareAndSwap(f, f+1) {
			return true
		}
	}
}

// overlaps reports whether [lba, lba+n) meets the rule range [rl, rl+rn)
// (rn == 0: everything). Empty calls overlap a range they start in.
// Computed without lba+n overflowing.
func overlaps(lba, n, rl, rn uint64) bool {
	if rn == 0 {
		return true
	}
	if n == 0 {
		n = 1
	}
	// lba < rl+rn && rl < lba+n, written as differences.
	if lba >= rl {
		return lba-rl < rn
	}
	return rl-lba < n
}

// act carries out rule r around the inner call do.
func (r *rule) act(op Op, do func() error) error {
	if r.Notify != nil {
		r.Notify <- op
	}
	if r.Hold != nil {
		<-r.Hold
	}
	err := r.Err
	if err == nil {
		if r.Hold != nil {
			return do()
		}
		err = blockdev.ErrMedium
	}
	if r.After {
		if ierr := do(); ierr != nil {
			return ierr
		}
	}
	return err
}

// ioBlocks is the number of blocks in bufs, or an impossible count when
// they are not whole blocks, so that pick leaves the call to the inner
// backend's checks.
func (b *Backend) ioBlocks(bufs [][]byte) uint64 {
	var total uint64
	for _, p := range bufs {
		total += uint64(len(p))
	}
	bs := uint64(b.inner.BlockSize())
	if total%bs != 0 {
		return ^uint64(0)
	}
	return total / bs
}

// ReadAt reads through the inner backend unless a rule acts.
func (b *Backend) ReadAt(bufs [][]byte, lba uint64) error {
	if b.rules.Load() == nil {
		return b.inner.ReadAt(bufs, lba)
	}
	if r := b.pick(OpRead, lba, b.ioBlocks(bufs), true); r != nil {
		return r.act(OpRead, func() error { return b.inner.ReadAt(bufs, lba) })
	}
	return b.inner.ReadAt(bufs, lba)
}

// WriteAt writes through the inner backend unless a rule acts.
func (b *Backend) WriteAt(bufs [][]byte, lba uint64, flags blockdev.WriteFlags) error {
	if b.rules.Load() == nil {
		return b.inner.WriteAt(bufs, lba, flags)
	}
	if r := b.pick(OpWrite, lba, b.ioBlocks(bufs), true); r != nil {
		return r.act(OpWrite, func() error { return b.inner.WriteAt(bufs, lba, flags) })
	}
	return b.inner.WriteAt(bufs, lba, flags)
}

// Flush flushes the inner backend unless a rule acts.
func (b *Backend) Flush() error {
	if r := b.pick(OpFlush, 0, 0, false); r != nil {
		return r.act(OpFlush, b.inner.Flush)
	}
	return b.inner.Flush()
}

// WriteZeroes zeroes through the inner backend unless a rule acts.
func (b *Backend) WriteZeroes(lba, n uint64) error {
	if r := b.pick(OpWriteZeroes, lba, n, true); r != nil {
		return r.act(OpWriteZeroes, func() error { return b.inner.WriteZeroes(lba, n) })
	}
	return b.inner.WriteZeroes(lba, n)
}

// Discard discards through the inner backend unless a rule acts.
func (b *Backend) Discard(lba, n uint64) error {
	if r := b.pick(OpDiscard, lba, n, true); r != nil {
		return r.act(OpDiscard, func() error { return b.inner.Discard(lba, n) })
	}
	return b.inner.Discard(lba, n)
}

// Close closes the inner backend. Rules do not apply to it.
func (b *Backend) Close() error { return b.inner.Close() }
