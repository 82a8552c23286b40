// Package ublk is a ublk server: it turns a Linux userspace block device
// (/dev/ublkbN, driver ublk_drv, Linux ≥ 6.0; written and tested against
// 6.12) into asynchronous calls on a Backend — in rdmablk, the NVMe-oF
// initiator's I/O queues. The ABI is include/uapi/linux/ublk_cmd.h; the
// behaviour relied on is drivers/block/ublk_drv.c as of 6.12. The code is
// our own.
//
// # Control path
//
// Control commands (ADD_DEV, SET_PARAMS, GET_PARAMS, START_DEV, STOP_DEV,
// DEL_DEV, DEL_DEV_ASYNC, GET_DEV_INFO, START_USER_RECOVERY,
// END_USER_RECOVERY, GET_FEATURES) go to /dev/ublk-control as IORING_OP_URING_CMD with the
// ioctl-encoded UBLK_U_CMD_* opcodes and a 32-byte struct ublksrv_ctrl_cmd
// in the command area of a 128-byte SQE (the driver refuses control
// commands on rings without IORING_SETUP_SQE128). Control serialises
// them; each waits for its completion. Rings are blockdev/uring.Ring128.
//
// Create: ADD_DEV (flags USER_RECOVERY | USER_RECOVERY_REISSUE |
// CMD_IOCTL_ENCODE; the kernel lowers the queue count to the CPU count and
// rounds the buffer size down to a page — the granted values are used),
// SET_PARAMS (logical/physical block size, capacity, max_sectors from the
// backend's MaxTransfer, discard and write-zeroes limits, and
// VOLATILE_CACHE + FUA when the backend has a volatile write cache, so the
// block layer sends REQ_OP_FLUSH and REQ_FUA, which become NVMe Flush and
// the FUA bit), the queues, START_DEV.
//
// # Queues and goroutines
//
// One ublk queue per backend queue, with the backend's depth. Each is
// served by one goroutine locked to its OS thread (the driver takes a
// queue's commands only from the task that fetched first) with its own
// ring: FETCH_REQ for every tag at start, then for each request the
// kernel delivers (its descriptor read from the queue's read-only mmap of
// /dev/ublkcN) Submit to the backend, and when the backend completes,
// COMMIT_AND_FETCH_REQ with the result — which also re-arms the tag. The
// goroutine sleeps in io_uring_enter; backend completions arrive on a
// lock-free ring (compring.go; room for depth, so Complete never blocks)
// and wake it through an eventfd read kept armed in the ring, written
// only when the goroutine is asleep. A batching backend (Flusher) issues each loop's requests in
// Flush; one whose completions are signalled on a descriptor (Waiter: an
// RDMA CQ's completion channel) hands that descriptor to the loop, which
// keeps a one-shot POLL_ADD of it armed in the same ring, so one
// io_uring_enter sleeps for block requests and NVMe completions alike and
// the backend reaps them on this goroutine (Flush, Arm): no other
// goroutine and no eventfd write between a completion and its commit.
// The goroutine never parks in Go (it sleeps in a raw io_uring_enter), so
// it passes through the scheduler itself every few milliseconds
// (internal/nbsys.Yielder) before the runtime would preempt it.
// Each tag's state (idle → fetching → executing →
// [commit-pending] → fetching … → aborted) is explicit in tagSlot.
//
// A descriptor is kernel input and is validated before use: the op (read,
// write, flush, discard, write-zeroes; anything else EOPNOTSUPP), whole
// logical blocks, the range inside the device (overflow-checked), reads
// and writes ≤ max_io_buf_bytes, discards ≤ their limits. A failing check
// completes the request with an errno; the backend never sees it.
//
// # Data path and buffer lifetimes
//
// The mode is copy mode with server buffers, the driver's default: with
// FETCH_REQ and each COMMIT_AND_FETCH_REQ the server gives the kernel the
// address of a buffer of max_io_buf_bytes; for a write the kernel copies
// the bio's pages into it before delivering the request, for a read it
// copies out of it after the commit — out of the address named in the
// commit itself, which is why each tag keeps one buffer for the life of
// the queue. The buffer is BackendQueue.Buffer(tag). When a backend hands
// out memory its transport moves directly, that kernel copy is the only
// one: the initiator adapter (internal/attach/ublkback) registers its tag
// buffers with the initiator session, so the NVMe-oF target RDMA-reads
// and RDMA-writes them in place and no second copy happens.
//
// Why not the other modes (include/uapi/linux/ublk_cmd.h and
// drivers/block/ublk_drv.c; facts as read from the kernel sources):
//   - UBLK_F_SUPPORT_ZERO_COPY (bit 0) exists in the header, but ADD_DEV
//     silently clears it (the driver says it is not ready for zero copy)
//     in every driver before the zero-copy rework of 6.15 — 6.12
//     included (the rework's patches of November 2024 still replace that
//     line): the device comes up in copy mode anyway.
//   - UBLK_F_USER_COPY (bit 7, since 6.5) still copies: the server moves
//     each request's data with pread or pwrite on /dev/ublkcN — the same
//     one copy, plus system calls per request.
//   - The zero-copy of 6.15+ (UBLK_U_IO_REGISTER_IO_BUF /
//     UNREGISTER_IO_BUF; UBLK_F_AUTO_BUF_REG, bit 11, in 6.16) lends the
//     request's pages to an io_uring as a fixed buffer that only io_uring
//     operations can use; the server itself never gets to address that
//     memory (the header says so). An RDMA NIC moves data only to or from
//     memory registered as an MR, so an RDMA initiator cannot use it, and
//     6.12 does not have it anyway.
//
// Copy mode with registered server buffers is thus the minimum for an
// RDMA backend on 6.12 (one kernel copy per request).
//
// A buffer handed to the kernel is used by it until the tag's next
// completion (a request, or ABORT); the backend must keep every buffer
// mapped until BackendQueue.Close. Request values live in the queue's
// per-tag slots: the backend may use a *Request (and its Data) only until
// it calls Complete. The hot path allocates nothing.
//
// # Recovery
//
// With UBLK_F_USER_RECOVERY the driver keeps /dev/ublkbN when its server
// dies (its io_uring torn down: process exit, or Detach): it quiesces the
// queue and, with UBLK_F_USER_RECOVERY_REISSUE, requeues the requests the
// dead server held, so applications see a stall, not an error. Recover
// waits for the device to be quiesced and the old server's files to be
// closed, then START_USER_RECOVERY, opens fresh queues on the given
// backend (which must have the device's block size and capacity) and
// END_USER_RECOVERY: the held I/O is reissued to the new server. Detach
// simulates a crash in-process (queues drop everything, their threads
// exit; no queue is ever served from the main thread, which Go never
// ends); Stop is the clean end (STOP_DEV: I/O in flight completes, tags
// end with ABORT; then DEL_DEV_ASYNC, because DEL_DEV waits for the last
// opener — a mounted filesystem — to let go). Remove stops and deletes a
// device whose server is gone for good: the I/O held for a recovery then
// fails with EIO instead of waiting forever.
//
// # Errors
//
// Per request: an errno in the commit (the backend chooses it; see
// Completer). Per queue (fatal for that queue, reported by Device.Err):
// the kernel refusing our FETCH/COMMIT, or a completion for a tag that is
// not fetching. Control: *CmdError with the command, device and errno;
// ErrNoUblk when the driver is not loaded. A backend that completes a tag
// twice, or returns a buffer shorter than max_io_buf_bytes, breaks the
// contract and panics the queue goroutine (the kernel would otherwise
// copy out of bounds).
package ublk
