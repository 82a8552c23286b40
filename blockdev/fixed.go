package blockdev

import "errors"

// FixedBuffers is an optional capability of an Async backend whose device
// queue can pre-register caller memory (io_uring fixed buffers): the pages
// are pinned and mapped once, at RegisterFixed, instead of on every I/O.
// A transport registers the memory its data buffers live in (RDMA
// registered memory) once per queue, then names that registration on each
// submission.
//
// RegisterFixed registers region and returns its handle. It may block
// (a system call) and is meant for queue setup, not the I/O path. It
// fails with an error wrapping ErrFixedUnavailable when the backend or
// the kernel cannot take the region now (no fast path, table full, the
// kernel refused: RLIMIT_MEMLOCK, EPERM); the caller then just uses the
// Async methods. region must stay mapped until UnregisterFixed has
// returned and every I/O submitted against it has completed.
//
// UnregisterFixed drops a registration; an unknown or stale handle, or a
// closed backend, is ignored. I/Os in flight against it still complete.
//
// SubmitReadFixed and SubmitWriteFixed are SubmitRead and SubmitWrite
// (same contract, same fallback on false) for a buf inside the region reg
// names; a buf outside it, or a stale handle, is carried out as by
// SubmitRead / SubmitWrite. They do not allocate.
type FixedBuffers interface {
	Async
	RegisterFixed(region []byte) (FixedRegion, error)
	UnregisterFixed(reg FixedRegion)
	SubmitReadFixed(buf []byte, lba uint64, reg FixedRegion, done Completion) bool
	SubmitWriteFixed(buf []byte, lba uint64, flags WriteFlags, reg FixedRegion, done Completion) bool
}

// FixedRegion is a handle to memory registered with
// FixedBuffers.RegisterFixed. Its value means something only to the
// backend that returned it.
type FixedRegion uint64

// ErrFixedUnavailable: the backend cannot register the region (see
// FixedBuffers); not an I/O error.
var ErrFixedUnavailable = errors.New("blockdev: fixed buffers unavailable")
