package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// memQueues is the number of I/O queues per measuring controller (the
// default target.max_io_queues), memCtrls the number of such controllers:
// their RSS is divided by memCtrls*memQueues, which averages out the Go
// heap's noise.
const (
	memQueues = 16
	memCtrls  = 4
)

// memDepth is the queue depth of the per-QP measurement.
const memDepth = 128

// memResult holds the memory figures.
type memResult struct {
	idle  int64   // RSS of rdmablkd after start, no connection
	perQP []int64 // RSS added per connected I/O QP at depth memDepth, per repeat
}

// measureMemory reads rdmablkd's RSS idle, then connects controllers from
// this process: one with one I/O queue (the baseline: admin queue,
// controller, first-connection costs), then, per repeat, memCtrls more
// with memQueues I/O queues each; the RSS growth divided by their I/O
// queues is the cost of one connected QP (their admin queues are charged
// to the I/O queues, a small overestimate). No I/O runs on the queues, so the data buffers —
// anonymous mappings touched only by transfers — stay out of RSS: the
// figure excludes the buffer pool. Repeated o.repeats times.
func measureMemory(ctx context.Context, d *daemon, o *options, rep *report) (err error) {
	idle, err := procRSS(d.pid())
	if err != nil {
		return err
	}
	rep.mem.idle = idle
	prov := soft.New(soft.Options{})
	defer prov.Close()
	connect := func(queues int) (*initiator.Controller, error) {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return initiator.Connect(cctx, d.addr, benchNQN, initiator.Options{
			Provider: prov, IOQueues: queues, QueueDepth: memDepth, KeepAlive: -1,
		})
	}
	// Every controller stays connected until the end, so each repeat
	// measures fresh growth rather than reusing memory a closed
	// connection left in the daemon's heap.
	var ctrls []*initiator.Controller
	defer func() {
		for _, c := range ctrls {
			c.Close()
		}
	}()
	base, err := connect(1)
	if err != nil {
		return err
	}
	ctrls = append(ctrls, base)
	for i := range o.repeats {
		before, err := procRSS(d.pid())
		if err != nil {
			return err
		}
		for range memCtrls {
			c, err := connect(memQueues)
			if err != nil {
				return err
			}
			ctrls = append(ctrls, c)
			if got := c.NumQueues(); got != memQueues {
				return fmt.Errorf("controller got %d I/O queues, want %d (target.max_io_queues)", got, memQueues)
			}
		}
		after, err := procRSS(d.pid())
		if err != nil {
			return err
		}
		const n = memCtrls * memQueues
		rep.mem.perQP = append(rep.mem.perQP, (after-before)/n)
		logf("memory: repeat %d: idle %d KiB, +%d KiB per QP", i+1, idle>>10, (after-before)/n>>10)
		debug.FreeOSMemory() // this process only; keeps the harness small
	}
	return nil
}
