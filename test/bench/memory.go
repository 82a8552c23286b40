package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// memQueues is the number of I/O queues of the second controller whose RSS
// is divided per queue pair.
const memQueues = 16

// memDepth is the queue depth of the per-QP measurement.
const memDepth = 128

// memResult holds the memory figures.
type memResult struct {
	idle  int64   // RSS of rdmablkd after start, no connection
	perQP []int64 // RSS added per connected I/O QP at depth memDepth, per repeat
}

// measureMemory reads rdmablkd's RSS idle, then connects controllers from
// this process: one with one I/O queue (the baseline: admin queue,
// controller, first-connection costs), then one with memQueues I/O queues;
// the RSS difference divided by memQueues is the cost of one connected QP
// (the second controller's admin queue is charged to its I/O queues, a
// small overestimate). No I/O runs on the queues, so the data buffers —
// anonymous mappings touched only by transfers — stay out of RSS: the
// figure excludes the buffer pool. Repeated o.repeats times.
func measureMemory(ctx context.Context, d *daemon, o *options, rep *report) error {
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
	for i := range o.repeats {
		base, err := connect(1)
		if err != nil {
			return err
		}
		before, err := procRSS(d.pid())
		if err != nil {
			base.Close()
			return err
		}
		c, err := connect(memQueues)
		if err != nil {
			base.Close()
			return err
		}
		got := c.NumQueues()
		after, err := procRSS(d.pid())
		c.Close()
		base.Close()
		if err != nil {
			return err
		}
		if got != memQueues {
			return fmt.Errorf("controller got %d I/O queues, want %d (target.max_io_queues)", got, memQueues)
		}
		rep.mem.perQP = append(rep.mem.perQP, (after-before)/memQueues)
		logf("memory: repeat %d: idle %d KiB, +%d KiB per QP", i+1, idle>>10, (after-before)/memQueues>>10)
		debug.FreeOSMemory() // this process only; keeps the harness small
	}
	return nil
}
