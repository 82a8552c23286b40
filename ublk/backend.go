package ublk

import "syscall"

// Backend is what a ublk device needs from the storage behind it (in
// rdmablk: an NVMe-oF namespace reached through the initiator). It is
// owned by the consumer: the initiator is adapted to it, not the other
// way round.
//
// Geometry is called once per Create or Recover, before any queue opens.
// OpenQueue is called once per ublk queue per server incarnation (again
// after a recovery), from the goroutine that sets the device up; the
// returned BackendQueue is used only by that queue's goroutine, except for
// the Completer calls it makes.
type Backend interface {
	Geometry() Geometry
	// OpenQueue returns the backend queue serving ublk queue q (0 ≤ q <
	// the queue count the kernel granted, ≤ Geometry().Queues), with room
	// for depth requests in flight. The backend reports completions to
	// done. The queue must hold Buffer(tag) for every tag < depth.
	OpenQueue(q, depth int, done Completer) (BackendQueue, error)
}

// Geometry describes the device the kernel shows (ublk_param_basic and
// ublk_param_discard), from the namespace's Identify data.
type Geometry struct {
	// LogicalBlockSize is the LBA data size in bytes: 512, 1024, 2048 or
	// 4096 (the kernel refuses more than a page). NVMe: LBAF[FLBAS].LBADS.
	LogicalBlockSize uint32
	// PhysicalBlockSize ≥ LogicalBlockSize (0: the same). NVMe: NPWG/NAWUPF.
	PhysicalBlockSize uint32
	// Blocks is the capacity in logical blocks (NVMe NSZE).
	Blocks uint64
	// Queues is the number of backend queues; the device gets as many ublk
	// queues, up to the number of CPUs (the kernel's limit).
	Queues int
	// Depth is the requests in flight per queue (≤ 4096): ublk tags per
	// queue and buffers per queue.
	Depth int
	// MaxTransfer is the largest read or write in bytes (NVMe MDTS), a
	// multiple of the page size; every Buffer holds at least this much.
	MaxTransfer uint32
	// MaxDiscardBlocks is the largest discard in logical blocks; 0: no
	// discard (NVMe ONCS.DSM clear).
	MaxDiscardBlocks uint32
	// MaxWriteZeroesBlocks is the largest write-zeroes in logical blocks;
	// 0: none (ONCS.WZ clear).
	MaxWriteZeroesBlocks uint32
	// VolatileCache: the device has a volatile write cache (NVMe VWC), so
	// the kernel sends flushes (and FUA writes when FUA is set).
	VolatileCache bool
	// FUA: writes honour force-unit-access (NVMe: always; set with
	// VolatileCache).
	FUA bool
	// ReadOnly, Rotational: as the kernel's queue attributes.
	ReadOnly, Rotational bool
}

// Op is a request's operation.
type Op uint8

// Operations (from UBLK_IO_OP_*), each with its NVMe command.
const (
	OpRead        Op = iota // NVMe Read (NVM Command Set §3.3.4)
	OpWrite                 // NVMe Write (§3.3.6), FUA bit from Request.FUA
	OpFlush                 // NVMe Flush (§7.1)
	OpDiscard               // NVMe Dataset Management, deallocate (§3.3.3)
	OpWriteZeroes           // NVMe Write Zeroes (§3.3.7), DEAC = !NoUnmap
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFlush:
		return "flush"
	case OpDiscard:
		return "discard"
	case OpWriteZeroes:
		return "write-zeroes"
	}
	return "op?"
}

// Request is one block request, decoded from the kernel's descriptor and
// validated: ranges lie inside the device and are whole logical blocks;
// reads and writes are at most MaxTransfer, discards and write-zeroes at
// most their limits. It lives in the queue's per-tag slot: the backend
// must not keep the pointer (or Data) after it calls Complete.
type Request struct {
	Op Op
	// FUA: the write must be durable before completion.
	FUA bool
	// NoUnmap (write-zeroes): keep the blocks allocated (NVMe DEAC=0);
	// otherwise the device may deallocate them.
	NoUnmap bool
	// Offset and Length are in bytes (0 for a flush). LBA = Offset /
	// LogicalBlockSize.
	Offset uint64
	Length uint64
	// Data (read/write only) is Buffer(tag)[:Length] of the buffer handed
	// to the kernel for this tag: for a write the kernel has already copied
	// the payload into it; for a read the backend fills it and the kernel
	// copies it out after Complete. nil for the other operations.
	Data []byte
}

// BackendQueue is one backend queue, driven by one ublk queue goroutine.
type BackendQueue interface {
	// Buffer returns tag's data buffer: at least Geometry().MaxTransfer
	// bytes of memory the backend moves data with directly (the
	// initiator's registered memory). Called once per tag, by the queue
	// goroutine before its first FETCH_REQ; the buffer is the tag's for
	// the life of the queue (the kernel copies into and out of it until
	// Close): every request on tag has its data there. It must stay mapped
	// until Close returns.
	Buffer(tag uint16) []byte
	// Submit starts req for tag. The backend calls Completer.Complete(tag,
	// …) exactly once, from any goroutine, possibly before Submit returns.
	// Called from the queue goroutine; it may block briefly (waiting for a
	// free slot on a shared queue), never for a completion of this queue.
	// It must not allocate.
	Submit(tag uint16, req *Request)
	// Close is called once after the queue goroutine has stopped and every
	// submitted request has completed.
	Close() error
}

// Flusher is an optional BackendQueue capability, for a backend that
// batches: its Submit may hold requests back until Flush. The queue
// goroutine calls Flush once per loop — after it submitted the requests
// one wake-up brought and before it waits in the kernel again — and once
// more when it stops, before it waits for the requests still in flight.
// Flush issues what Submit held and may complete requests
// (Completer.Complete) before it returns; it never waits for a
// completion (it may wait for the transport to take what it sends) and
// allocates nothing.
type Flusher interface {
	Flush()
}

// Waiter is an optional Flusher capability, for a backend whose
// completions are signalled on a descriptor (an RDMA CQ's completion
// channel): the queue goroutine waits for it in its own io_uring, next to
// the kernel's block requests, and calls Flush when it is readable, so
// that the backend's completions are reaped on the queue goroutine and
// no other goroutine wakes it. The queue calls Arm after every Flush
// before it sleeps, and Release once, when it stops serving (before it
// waits for the requests still in flight), or when it cannot wait for
// the descriptor.
type Waiter interface {
	Flusher
	// Arm prepares the backend's descriptor for the queue's sleep and
	// returns it (wait for POLLIN) with a key naming it: the same key, the
	// same descriptor (a poll still armed for it stays); another key
	// replaces it (the old poll is cancelled: its number may name another
	// file by now). fd < 0: nothing to wait for there now — with key 0 no
	// descriptor at all (a poll still armed is cancelled), with the armed
	// poll's key nothing in flight (the poll stays); completions not
	// reaped here come through the Completer. signalled: the descriptor of
	// the last Arm was readable since. Requests may complete inside Arm,
	// as in Flush. It allocates nothing.
	Arm(signalled bool) (fd int, key uint64)
	// Release: the queue no longer waits for the descriptor; the
	// backend's own goroutines report every completion from now on.
	Release()
}

// Waker is implemented by the Completer a queue hands its backend: Wake
// makes the queue goroutine run its loop (Flush, Arm) again soon without
// a completion — for a Waiter whose descriptor has work that its last
// Arm did not cover. Any goroutine; never blocks; allocates nothing.
type Waker interface {
	Wake()
}

// Completer receives a backend queue's completions.
type Completer interface {
	// Complete reports the end of tag's request: errno 0 for success, or
	// the error the kernel should end the request with (syscall.EIO for a
	// media or transport error, ENOSPC capacity exceeded, EOPNOTSUPP
	// unsupported, ENODATA unrecovered read, EILSEQ protection error, EBADE
	// reservation conflict, ETIMEDOUT; as nvme_error_status in Linux's
	// nvme host). Safe from any goroutine; never blocks; allocates nothing.
	Complete(tag uint16, errno syscall.Errno)
}
