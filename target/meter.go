package target

import "time"

// IOOp is the kind of an I/O command reported to an IOMeter.
type IOOp uint8

// I/O operations a namespace meters.
const (
	OpRead        IOOp = iota // NVM Read
	OpWrite                   // NVM Write
	OpFlush                   // Flush of the namespace
	OpWriteZeroes             // Write Zeroes
	OpDeallocate              // Dataset Management, deallocate
)

// meterSampleEvery: one metered command in this many per queue is timed
// (two clock reads); the others carry Latency 0. A power of two.
const meterSampleEvery = 64

// IOSample describes one completed I/O command of a namespace.
type IOSample struct {
	Op IOOp
	// Bytes is the data moved by a successful Read or Write, else 0.
	Bytes int
	// Latency is the time from Queue.Execute to completion in the core
	// for one command in meterSampleEvery per queue (a sample for
	// latency histograms); 0 for the others. The I/O path reads no clock
	// for unsampled commands.
	Latency time.Duration
	// Failed: the command completed with a non-success status.
	Failed bool
}

// IOMeter receives the I/O of a namespace (NamespaceConfig.Meter). MeterIO
// is called once per completed command from the goroutine that completed
// it (a queue's goroutine, a worker, a backend's completion goroutine),
// concurrently; it must not block and should not allocate.
type IOMeter interface {
	MeterIO(s IOSample)
}

// meterStart decides whether a metered command is timed. Queue goroutine
// only (q.meterSeq).
func (q *Queue) meterStart(rc *requestCore) {
	q.meterSeq++
	if q.meterSeq%meterSampleEvery == 0 {
		rc.start = q.t.opts.clock.Now()
	}
}

// meterDone reports rc's command to its namespace's meter.
func (q *Queue) meterDone(rc *requestCore, ok bool) {
	s := IOSample{Failed: !ok}
	switch rc.kind {
	case kindRead, kindWrite:
		s.Op = OpRead
		if rc.kind == kindWrite {
			s.Op = OpWrite
		}
		if ok {
			s.Bytes = len(rc.vec[0])
		}
	case kindFlush:
		s.Op = OpFlush
	case kindWriteZeroes:
		s.Op = OpWriteZeroes
	case kindDiscard:
		s.Op = OpDeallocate
	default:
		return
	}
	if !rc.start.IsZero() {
		s.Latency = q.t.opts.clock.Now().Sub(rc.start)
	}
	rc.ns.meter.MeterIO(s)
}
