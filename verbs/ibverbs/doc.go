// Package ibverbs is the verbs provider over libibverbs and librdmacm
// (cgo; built only with the build tag "ibverbs" — the default build of the
// module stays pure Go and needs no C headers). It runs on any RDMA device
// rdma-core drives: Soft-RoCE (rdma_rxe), mlx5, VMware PVRDMA, …
//
//	go build -tags ibverbs ./...      # needs libibverbs-dev and librdmacm-dev
//
// Without the tag this package is empty.
//
// # Ownership and buffer lifetimes
//
// The package follows the verbs package contract, with these specifics:
//
//   - Memory registered with RegisterMemory is read and written by the
//     device (DMA, or the kernel for rxe) until MemoryRegion.Close returns.
//     It must be outside the Go heap (mmap, C allocation): the Go collector
//     may not move heap objects today, but cgo forbids C from keeping Go
//     pointers, and a slice the program drops would be freed under the
//     device. The provider never allocates or frees registered memory.
//   - Work requests are encoded at post time into per-QP scratch memory
//     allocated with C (a compact record per WR, an ibv_sge array and an
//     ibv_send_wr / ibv_recv_wr array, each one batch long) and posted with
//     one cgo call per batch of up to 32 WRs. SendWR/RecvWR values and their
//     SGL slices are not retained after PostSend / PostRecv return.
//   - Poll writes completions directly into the caller's []WorkCompletion
//     from C (the layouts are checked at compile time); one cgo call serves
//     up to len(wc) completions.
//   - Private data of connect requests, replies and rejects is copied out
//     of librdmacm's event record, and the record acknowledged, in the same
//     cgo call; the Go values are owned by the receiver.
//
// # Goroutines and the poller
//
// One goroutine per Provider serves the rdma_cm event channel, one per
// device its asynchronous event fd, and one per CompletionQueue its
// completion channel. Each descriptor is made non-blocking and waited on in
// Go's network poller (see evfd.go), so an idle CQ costs a parked
// goroutine, not an OS thread. A consumer busy-polls with Poll while work
// flows and, when a Poll comes back empty, arms with ReqNotify, polls once
// more and then sleeps on Notify (verbs.Wait); ReqNotify and Poll are each a
// single short cgo call. A consumer with its own epoll loop (the target's
// poll groups) detaches a CQ (verbs.FDNotifier): the CQ's goroutine stops,
// the consumer waits on the completion channel's descriptor and takes each
// event with TakeNotify (ibv_get_cq_event + ack, one cgo call); AttachNotify
// starts a new goroutine (and evfd) for the CQ's remaining life.
//
// # Connection management
//
// Resolve, Connect, Accept wait for their rdma_cm events on a per-ID
// channel. A REJECTED event with status 28 (IB_CM_REJ_CONSUMER_DEFINED) is
// a consumer reject (*verbs.RejectError with Consumer true and the peer's
// private data); any other reject, UNREACHABLE, ADDR/ROUTE_ERROR or
// CONNECT_ERROR is not. DISCONNECTED and DEVICE_REMOVAL move the QP to the
// error state (outstanding work flushes) and close Done with
// verbs.ErrDisconnected / verbs.ErrDeviceRemoved. An asynchronous CQ error
// (overrun) makes Poll return verbs.ErrCQOverrun and moves every QP on the
// CQ to the error state, as the verbs contract says (rxe does not do that
// by itself).
//
// # Errors
//
// ENOSYS from libibverbs and ENODEV from librdmacm — a kernel without RDMA
// — and a host without devices make New return an error wrapping
// verbs.ErrNoDevice. Other errno values are wrapped with the matching verbs
// sentinel (EINVAL → ErrInvalid, ENOMEM on post → ErrQueueFull, …).
// Limits the device reports are checked in Go first, so the error names the
// work request or argument at fault.
//
// SEND_WITH_INV is offered (verbs.CapSendWithInv) when the device reports
// memory-management extensions and its userspace provider accepts the
// opcode (not VMware PVRDMA).
package ibverbs
