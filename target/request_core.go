package target

import "time"

// reqState is where a Request is in the core (SPDK-style explicit states).
type reqState uint8

const (
	// stateIdle: not in the core (before Execute, after completion).
	stateIdle reqState = iota
	// stateExecuting: inside Queue.Execute on the transport goroutine.
	stateExecuting
	// stateQueued: waiting in the worker pool's channel.
	stateQueued
	// stateWorking: a worker runs the backend call.
	stateWorking
	// stateSubmitted: the backend's asynchronous path (blockdev.Async)
	// owns the I/O; its IODone completes the request.
	stateSubmitted
	// stateHeld: an Asynchronous Event Request held until an event.
	stateHeld
	// stateCompleted: the CQE is final; handed to QueueConn.Complete.
	stateCompleted
)

var reqStateNames = [...]string{"idle", "executing", "queued", "working", "submitted", "held", "completed"}

func (s reqState) String() string {
	if int(s) < len(reqStateNames) {
		return reqStateNames[s]
	}
	return "invalid"
}

// execKind is the backend operation a request performs once parsed.
type execKind uint8

const (
	kindNone        execKind = iota
	kindRead                 // ReadAt(vec, slba)
	kindWrite                // WriteAt(vec, slba, flags)
	kindFlush                // Flush of ns
	kindFlushAll             // Flush of every namespace in tbl (NSID FFFFFFFFh)
	kindWriteZeroes          // WriteZeroes(slba, nlb)
	kindDiscard              // Dataset Management deallocate: nlb ranges in Data
	kindShutdown             // CC.SHN: flush tbl, then report shutdown complete
	kindAuthSend             // Authentication Send: a DH-HMAC-CHAP message from the host (auth.go)
	kindAuthRecv             // Authentication Receive: the controller's next message (auth.go)
)

// requestCore is the core's private per-request state, embedded in the
// transport-owned Request so that the I/O path allocates nothing. It is
// written by the goroutine that currently owns the request (the queue's
// goroutine in Execute, then at most one worker, event raiser or
// asynchronous backend completion).
type requestCore struct {
	req   *Request // the Request this core is embedded in (asynchronous backends)
	state reqState
	kind  execKind
	fua   bool
	q     *Queue
	ns    *namespace  // holds a reference (ns.ref) while non-nil
	ctrl  *Controller // SMART counters; shutdown target; authenticating controller
	tbl   *nsTable    // kindFlushAll, kindShutdown
	slba  uint64
	nlb   uint64 // blocks; kindDiscard: number of ranges
	vec   [1][]byte
	// start is when a sampled metered command entered Execute (zero:
	// not timed; meter.go).
	start time.Time
}
