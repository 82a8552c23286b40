// Package verbs models RDMA verbs and RDMA connection management as Go
// interfaces, so that the NVMe-oF target and initiator are written once and
// run over any provider: the pure-Go soft provider (verbs/soft), or
// libibverbs + librdmacm through cgo (verbs/ibverbs, build tag "ibverbs").
//
// The object graph follows libibverbs:
//
//	Provider → Device → ProtectionDomain → MemoryRegion
//	                  → CompletionQueue
//	ConnID (rdma_cm_id) → QueuePair (RC)
//
// # Ownership and buffer lifetimes
//
//   - Memory handed to ProtectionDomain.RegisterMemory belongs to the caller.
//     It must stay valid, and must not move, until MemoryRegion.Close returns.
//     Providers that hand the memory to hardware (ibverbs) require memory
//     outside the Go heap (mmap); the soft provider accepts any slice.
//   - An SGE names registered memory by (Addr, Length, LKey). From PostSend or
//     PostRecv until the work request's completion is polled, the provider may
//     read or write those bytes at any time; the caller must not touch them.
//   - SendWR and RecvWR values, and their SGL slices, are only read during the
//     PostSend / PostRecv call; the caller may reuse them immediately after.
//   - WorkCompletion values are copied into the caller's slice by Poll.
//   - ConnParam.PrivateData is copied by Connect / Accept / Reject; the
//     PrivateData of a received ConnRequest or RejectError is owned by the
//     receiver.
//
// # Concurrency
//
// PostSend, PostRecv and Poll may be called from any goroutine, but the
// intended (and fastest) use is one goroutine per queue that owns the QP and
// its CQs. Close methods may be called from any goroutine; work requests still
// outstanding when a QP closes complete with WCWRFlushErr.
//
// # Errors
//
// Control-path calls return the sentinel errors of this package (wrapped with
// detail). Data-path failures are reported as WorkCompletion statuses, never
// as panics: a remote access with a bad rkey, out of bounds or without the
// access right completes with WCRemAccessErr on the requester and moves both
// QPs to the error state, as RC hardware does.
package verbs
