package target

import (
	"sync"
	"sync/atomic"
)

// gate counts users of a resource (a namespace's backend, the worker pool)
// and lets an owner close it and wait until the last user left, without a
// lock on the enter/leave path.
//
// Protocol (Go atomics are sequentially consistent): enter increments and
// then checks closing; close sets closing and then checks the count. So
// either an entering user sees closing and backs out, or close sees the
// user's increment and waits for its leave. The zero value is not usable;
// call init first.
type gate struct {
	n       atomic.Int64
	closing atomic.Bool
	once    sync.Once
	done    chan struct{}
}

func (g *gate) init() { g.done = make(chan struct{}) }

// enter registers a user. It reports false, registering nothing, once the
// gate is closing. Any goroutine; never blocks.
func (g *gate) enter() bool {
	g.n.Add(1)
	if g.closing.Load() {
		g.leave()
		return false
	}
	return true
}

// leave unregisters a user registered by a successful enter.
func (g *gate) leave() {
	if g.n.Add(-1) == 0 && g.closing.Load() {
		g.once.Do(g.finish)
	}
}

func (g *gate) finish() { close(g.done) }

// close makes later enters fail and returns a channel closed once every
// user has left. Idempotent; any goroutine.
func (g *gate) close() <-chan struct{} {
	g.closing.Store(true)
	if g.n.Load() == 0 {
		g.once.Do(g.finish)
	}
	return g.done
}
