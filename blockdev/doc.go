// Package blockdev defines the storage a namespace serves: Backend, its
// optional capability interfaces, and the errors backends report.
//
// # Implementations
//
//   - blockdev/file: a regular file or a Linux block device, O_DIRECT when
//     the caller's buffers allow it, buffered otherwise.
//   - blockdev/mem: sparse in-memory volume (chunks allocated on first write).
//   - blockdev/null: reads return zeroes, writes are dropped.
//   - blockdev/faulty: wraps another Backend and injects errors or stalls.
//   - blockdev/blockdevtest: the contract suite every implementation passes.
//
// # Ownership and buffer lifetimes
//
// The caller owns every buffer passed to ReadAt and WriteAt. A backend uses
// a buffer only for the duration of the call: it neither retains nor
// reslices it after returning, and it never writes into a buffer given to
// WriteAt. The buffers of one ReadAt call must not alias each other.
// The transport may therefore hand a backend slices of registered RDMA
// memory (zero copy) and reuse them as soon as the call returns; blockdev
// never imports verbs.
//
// # Concurrency
//
// All methods of a Backend may be called from several goroutines at once.
// Concurrent I/O on overlapping ranges completes in an order the backend
// chooses; a read that overlaps a concurrent write may see old data, new
// data or a mix of both (no backend here promises atomic blocks, as NVMe
// AWUN/AWUPF of 0 allow). Close waits for
// calls already in progress (file) or makes them fail with ErrClosed (mem,
// null); every call that starts after Close returns ErrClosed.
//
// Optional capabilities (Async, AsyncBatcher, Poller, FixedBuffers,
// Resizer, NonBlocking) are found by type assertion on the Backend; a wrapper must
// expose its inner backend's (blockdevtest's Caps.Capabilities checks it).
// The mirror (blockdev/mirror) does not expose Poller yet: a replicated
// volume's completions always come from its legs' own goroutines.
// file, mem and null implement Resizer in place, keeping the others.
//
// Backends that implement NonBlocking and report true never wait on I/O
// and may be called inline on a queue poller; all others may block in any
// method and must be called off the poller.
//
// # Errors and their NVMe status
//
// Backends wrap the sentinel errors below (test with errors.Is); the
// target maps them to NVMe status codes (NVMe Base 2.0, §4.5 / Figure 102,
// 103, 105) as follows:
//
//	ErrOutOfRange -> Generic, LBA Out of Range (0x80)
//	ErrUnaligned  -> Generic, Invalid Field in Command (0x02)
//	ErrMedium     -> Media, Unrecovered Read Error (0x81) for reads,
//	                 Write Fault (0x80) for writes, zeroes and discards
//	ErrReadOnly   -> Generic, Namespace is Write Protected (0x20)
//	ErrClosed     -> Generic, Namespace Not Ready (0x82)
//	ErrNoSpace    -> Generic, Capacity Exceeded (0x81)
//	ErrPathUnavailable -> Path Related (3h), Asymmetric Access
//	                 Inaccessible (0x02), no DNR: checked first, so it
//	                 wins over any other sentinel the error also wraps
//	anything else -> Generic, Internal Error (0x06)
//
// Range checks are done before any data moves and are overflow safe:
// lba+n never wraps; a request that does not fit touches nothing.
package blockdev
