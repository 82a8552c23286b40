package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
)

// Config describes a load.
type Config struct {
	// Pattern: "rand" or "seq".
	Pattern string
	// RW: "read", "write" or "mixed".
	RW string
	// ReadPercent is the share of reads for "mixed" (0-100; other
	// values are refused whatever RW is).
	ReadPercent int
	// BlockSize is the I/O size in bytes (a multiple of the namespace
	// block size, at most the controller's maximum transfer).
	BlockSize int
	// QueueDepth is the I/Os each job keeps outstanding. A queue whose
	// negotiated depth is smaller runs at that depth: Result.QueueDepth says
	// what ran.
	QueueDepth int
	// Jobs is the number of jobs; job i uses I/O queue i.
	Jobs int
	// Duration bounds the run (ctx may end it earlier); 0 runs until ctx
	// ends.
	Duration time.Duration
	// Offset and Size bound the region (Size 0: to the end).
	Offset, Size int64
	// Seed makes random offsets reproducible (0: a fixed default).
	Seed uint64
}

// Snapshot is a progress report.
type Snapshot struct {
	Elapsed time.Duration
	IOs     uint64
	Bytes   uint64
	Errors  uint64
}

// Result is the outcome of a run.
type Result struct {
	Config Config
	// QueueDepth is the depth each job actually kept outstanding: the
	// smaller of Config.QueueDepth and the queues' negotiated depth.
	QueueDepth int
	Elapsed    time.Duration
	IOs        uint64
	Reads      uint64
	Writes     uint64
	Bytes      uint64
	Errors     uint64
	Latency    Histogram
	// FirstError is the first failed I/O's error, if any.
	FirstError error
}

// IOPS is I/Os per second.
func (r *Result) IOPS() float64 { return float64(r.IOs) / r.Elapsed.Seconds() }

// MBps is megabytes (10^6) per second.
func (r *Result) MBps() float64 { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// String is a one-paragraph summary.
func (r *Result) String() string {
	return fmt.Sprintf("%s %s bs=%d qd=%d jobs=%d: %.0f IOPS, %.1f MB/s, lat p50 %v p99 %v p99.9 %v max %v, %d errors",
		r.Config.Pattern, r.Config.RW, r.Config.BlockSize, r.Config.QueueDepth, r.Config.Jobs,
		r.IOPS(), r.MBps(), r.Latency.Quantile(0.5), r.Latency.Quantile(0.99),
		r.Latency.Quantile(0.999), r.Latency.Max(), r.Errors)
}

// drainTimeout bounds how long a job waits for its outstanding I/Os after
// the run ended.
const drainTimeout = 30 * time.Second

// ErrConfig reports an invalid load description.
var ErrConfig = errors.New("bench: invalid config")

func (c *Config) check(ns *initiator.Namespace, queues int) (first, blocks uint64, err error) {
	bs := ns.BlockSize()
	switch {
	case c.Pattern != "rand" && c.Pattern != "seq":
		return 0, 0, fmt.Errorf("%w: pattern %q (rand or seq)", ErrConfig, c.Pattern)
	case c.RW != "read" && c.RW != "write" && c.RW != "mixed":
		return 0, 0, fmt.Errorf("%w: rw %q (read, write or mixed)", ErrConfig, c.RW)
	case c.BlockSize <= 0 || c.BlockSize%bs != 0:
		return 0, 0, fmt.Errorf("%w: block size %d is not a multiple of the namespace block size %d", ErrConfig, c.BlockSize, bs)
	case c.QueueDepth <= 0 || c.Jobs <= 0:
		return 0, 0, fmt.Errorf("%w: queue depth and jobs must be positive", ErrConfig)
	case c.ReadPercent < 0 || c.ReadPercent > 100:
		return 0, 0, fmt.Errorf("%w: read percentage %d (0 to 100)", ErrConfig, c.ReadPercent)
	case c.Duration < 0:
		return 0, 0, fmt.Errorf("%w: negative duration %v", ErrConfig, c.Duration)
	case c.Jobs > queues:
		return 0, 0, fmt.Errorf("%w: %d jobs but the controller has %d I/O queues", ErrConfig, c.Jobs, queues)
	case c.Offset < 0 || c.Offset%int64(bs) != 0 || c.Size < 0 || c.Size%int64(bs) != 0:
		return 0, 0, fmt.Errorf("%w: offset and size must be non-negative multiples of %d", ErrConfig, bs)
	}
	total := ns.Size()
	end := total
	if c.Size > 0 {
		end = c.Offset + c.Size
	}
	if c.Offset >= total || end > total || end-c.Offset < int64(c.BlockSize) {
		return 0, 0, fmt.Errorf("%w: region [%d, %d) outside the namespace (%d bytes) or smaller than one I/O", ErrConfig, c.Offset, end, total)
	}
	return uint64(c.Offset / int64(bs)), uint64((end - c.Offset) / int64(bs)), nil
}

// Run drives the load on ns through ctrl's I/O queues. progress, if not
// nil, is called about every interval from a separate goroutine.
func Run(ctx context.Context, ctrl *initiator.Controller, ns *initiator.Namespace, cfg Config,
	interval time.Duration, progress func(Snapshot)) (*Result, error) {
	first, blocks, err := cfg.check(ns, ctrl.NumQueues())
	if err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	jobs := make([]*job, cfg.Jobs)
	for i := range jobs {
		j, err := newJob(ctrl.Queue(i), ns, cfg, i, first, blocks)
		if err != nil {
			for _, p := range jobs[:i] {
				p.release()
			}
			return nil, err
		}
		jobs[i] = j
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j.run(ctx)
		}()
	}
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		if progress == nil || interval <= 0 {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				s := Snapshot{Elapsed: time.Since(start)}
				for _, j := range jobs {
					s.IOs += j.nIOs.Load()
					s.Bytes += j.nBytes.Load()
					s.Errors += j.errs.Load()
				}
				progress(s)
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	close(stopProgress)
	<-progressDone

	res := &Result{Config: cfg, Elapsed: elapsed, QueueDepth: cfg.QueueDepth}
	for _, j := range jobs {
		res.QueueDepth = min(res.QueueDepth, len(j.ios))
		res.IOs += j.nIOs.Load()
		res.Bytes += j.nBytes.Load()
		res.Errors += j.errs.Load()
		res.Reads += j.reads
		res.Writes += j.writes
		res.Latency.Merge(&j.hist)
		if res.FirstError == nil {
			res.FirstError = j.firstErr
		}
		j.release()
	}
	return res, nil
}

// job is one queue's worth of load. Its fields are owned by the job's
// goroutine except the atomics, read by the progress reporter.
type job struct {
	q        *initiator.IOQueue
	cfg      Config
	nsid     uint32
	first    uint64 // first LBA of the region
	blocks   uint64 // region size in LBAs
	nlb      uint32 // LBAs per I/O
	next     uint64 // sequential cursor (relative LBA)
	rng      *rand.Rand
	ios      []initiator.IO
	bufs     []*initiator.Buffer
	done     []*initiator.IO
	hist     Histogram
	reads    uint64
	writes   uint64
	nIOs     atomic.Uint64
	errs     atomic.Uint64
	nBytes   atomic.Uint64
	firstErr error
}

func newJob(q *initiator.IOQueue, ns *initiator.Namespace, cfg Config, idx int, first, blocks uint64) (*job, error) {
	depth := min(cfg.QueueDepth, q.Depth())
	seed := cfg.Seed
	if seed == 0 {
		seed = 0x5eed
	}
	nlb := uint32(cfg.BlockSize / ns.BlockSize())
	j := &job{
		q: q, cfg: cfg, nsid: ns.NSID(), first: first, blocks: blocks, nlb: nlb,
		rng:  rand.New(rand.NewPCG(seed, uint64(idx))),
		ios:  make([]initiator.IO, depth),
		bufs: make([]*initiator.Buffer, depth),
		done: make([]*initiator.IO, depth),
	}
	// Sequential jobs start at evenly spaced points of the region.
	span := blocks / uint64(nlb)
	j.next = span / uint64(cfg.Jobs) * uint64(idx) * uint64(nlb)
	for i := range j.bufs {
		b, ok := q.AllocBuffer()
		if !ok {
			j.release()
			return nil, fmt.Errorf("bench: queue has fewer than %d free buffers", depth)
		}
		if len(b.Bytes()) < cfg.BlockSize {
			q.FreeBuffer(b)
			j.release()
			return nil, fmt.Errorf("%w: block size %d exceeds the maximum transfer %d", ErrConfig, cfg.BlockSize, len(b.Bytes()))
		}
		fill(b.Bytes()[:cfg.BlockSize], j.rng)
		j.bufs[i] = b
	}
	return j, nil
}

func fill(p []byte, r *rand.Rand) {
	for i := 0; i+8 <= len(p); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8; k++ {
			p[i+k] = byte(v >> (8 * k))
		}
	}
}

func (j *job) release() {
	for i, b := range j.bufs {
		if b != nil {
			j.q.FreeBuffer(b)
			j.bufs[i] = nil
		}
	}
}

// nextLBA picks the next I/O's starting LBA.
func (j *job) nextLBA() uint64 {
	n := uint64(j.nlb)
	slots := j.blocks / n
	var slot uint64
	if j.cfg.Pattern == "rand" {
		slot = j.rng.Uint64N(slots)
	} else {
		slot = (j.next / n) % slots
		j.next += n
	}
	return j.first + slot*n
}

func (j *job) prep(i int) {
	io := &j.ios[i]
	write := j.cfg.RW == "write" || (j.cfg.RW == "mixed" && j.rng.IntN(100) >= j.cfg.ReadPercent)
	*io = initiator.IO{
		Op: initiator.IORead, NSID: j.nsid, LBA: j.nextLBA(), Blocks: j.nlb,
		Buf: j.bufs[i], User: uint64(i),
	}
	if write {
		io.Op = initiator.IOWrite
	}
}

func (j *job) run(ctx context.Context) {
	outstanding := 0
	submit := func(i int) bool {
		j.prep(i)
		if err := j.q.Submit(&j.ios[i]); err != nil {
			j.fail(err)
			return false
		}
		outstanding++
		return true
	}
	for i := range j.ios {
		if !submit(i) {
			break
		}
	}
	// When the run is over, stop submitting and reap what is in flight,
	// bounded in case the target stopped answering.
	stopping := false
	waitCtx := ctx
	drainCtx, cancel := context.WithCancel(context.Background())
	defer func() { cancel() }()
	stop := func() {
		if !stopping {
			stopping = true
			drainCtx, cancel = context.WithTimeout(context.Background(), drainTimeout)
			waitCtx = drainCtx
		}
	}
	for outstanding > 0 {
		n := j.q.Poll(j.done)
		if n == 0 {
			err := j.q.Wait(waitCtx)
			switch {
			case err == nil:
			case ctx.Err() != nil && !stopping:
				stop()
			default:
				j.fail(err)
				return
			}
			continue
		}
		if ctx.Err() != nil {
			stop()
		}
		for _, io := range j.done[:n] {
			outstanding--
			if err := io.Result(); err != nil {
				j.fail(err)
			} else {
				j.hist.Record(io.Latency)
				j.nIOs.Add(1)
				j.nBytes.Add(uint64(j.cfg.BlockSize))
				if io.Op == initiator.IORead {
					j.reads++
				} else {
					j.writes++
				}
			}
			if !stopping && j.errs.Load() == 0 {
				submit(int(io.User))
			}
		}
	}
}

func (j *job) fail(err error) {
	if j.errs.Add(1) == 1 {
		j.firstErr = err
	}
}
