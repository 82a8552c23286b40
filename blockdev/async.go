package blockdev

// Async is an optional capability of a Backend: reads and writes of one
// buffer that are started without blocking and finish later, so that a
// queue poller can keep many I/Os in flight without a goroutine per I/O
// (the file backend's io_uring fast path).
//
// SubmitRead and SubmitWrite either start the I/O and return true, or
// return false and do nothing (the backend cannot take it now: ring full,
// buffer not suitable for the fast path, backend closed, no io_uring).
// On false the caller uses ReadAt / WriteAt instead, so a false is never
// an I/O failure. They may be called from any goroutine and do not block
// on I/O.
//
// After true, done.IODone is called exactly once, from a goroutine of the
// backend or, for an I/O submitted under a plug, possibly from inside the
// AsyncBatcher.Unplug that started it (never from inside Submit*), with
// nil or an error as ReadAt /
// WriteAt would return it. buf belongs to the backend (and the kernel)
// until IODone is called: the caller must keep it alive and not touch it.
type Async interface {
	SubmitRead(buf []byte, lba uint64, done Completion) bool
	SubmitWrite(buf []byte, lba uint64, flags WriteFlags, done Completion) bool
}

// Completion receives the outcome of an asynchronous I/O. IODone must not
// block: it runs on the backend's completion goroutine, or inside Unplug.
type Completion interface {
	IODone(err error)
}

// AsyncBatcher is an optional extension of Async for submitters that work
// in bursts (a queue poller handling every command a poll returned). While
// at least one Plug is outstanding, Submit* may only queue an I/O; the
// Unplug that releases the last Plug hands everything queued to the device
// at once (one system call, one device notification). Plug and Unplug are
// paired by the caller, never block on I/O, and may be called from any
// goroutine; an I/O queued under a plug is delayed by at most the time
// until that Unplug. Unplug may finish I/O that completed during the
// submission — the Completion.IODone of any I/O on the backend's device
// queue, this caller's or another's — on the calling goroutine before it
// returns, so a caller must not hold across Unplug a lock that IODone
// takes.
type AsyncBatcher interface {
	Plug()
	Unplug()
}

// Poller is an optional extension of Async for a submitter that spins
// instead of sleeping while its I/O runs (an NVMe/TCP reader waiting for
// its host): Poll finishes, on the calling goroutine, the I/O the device
// has already completed — the Completion.IODone of any I/O on the
// backend's device queue, as Unplug — and returns how many. It never
// blocks and may find none (the backend's completion goroutine may have
// taken them). The same lock rule as Unplug holds.
type Poller interface {
	Poll() int
}
