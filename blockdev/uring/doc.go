// Package uring is a small io_uring layer of our own over raw system calls
// (Linux ≥ 5.6 for IORING_OP_READ/WRITE): ring setup and mapping,
// submission of read/write/nop entries, completion reaping, and fixed
// buffer registration (whole tables, or a sparse table updated entry by
// entry). It is what blockdev/file's asynchronous fast path
// runs on.
//
// Why our own: the io_uring libraries for Go either fail to link on Go
// 1.26 without -ldflags=-checklinkname=0 (giouring, iouring-go, gouring
// reach into runtime internals through linkname) or bring much more than
// the three operations needed here. The kernel ABI used is small and
// stable: io_uring_setup / io_uring_enter / io_uring_register, the SQ and
// CQ ring offsets from io_uring_params, and 64-byte SQEs / 16-byte CQEs.
//
// # Ownership and concurrency
//
// A Ring is used by two parties: submitters (any goroutine, serialised by
// the caller: Prepare and Submit are not safe for concurrent use) and one
// reaper (Wait and Reap, from one goroutine at a time). Wait blocks in
// io_uring_enter, which pins an OS thread for as long as it waits: a ring
// costs one descriptor and, with its reaper, one thread, so users share a
// few rings among many files (blockdev/file's RingGroup: one ring per
// core, any number of volumes) rather than making one per file. Nothing
// in a Ring is tied to a file: each SQE names its own descriptor, and its
// user data is the caller's to route the completion. The SQ belongs to
// the submitter side, the CQ to the reaper side; the kernel synchronises
// with each through the ring's head and tail words, which are read and
// written with atomic loads and stores.
//
// # Buffer lifetimes
//
// A buffer named by a prepared entry is used by the kernel from Submit
// until its completion is reaped: the caller keeps it alive and untouched
// for that time. Memory registered with RegisterBuffers must stay mapped
// until UnregisterBuffers or Close. A sparse table (RegisterSparse) is
// filled and emptied entry by entry with UpdateBuffer while I/O runs; an
// entry's memory must stay mapped until it is emptied (or replaced) and
// every I/O that named it has completed (the kernel keeps it pinned until
// then, so emptying with I/O in flight is safe). The table belongs to the
// ring, so on a ring shared by several files it is shared too: sharing and
// reference counting of entries is the caller's business.
//
// The package is Linux-only; elsewhere New returns ErrUnsupported.
// Two ring types share one core (ringcore_linux.go: setup, mappings, reaping,
// closing): Ring, with 64-byte SQEs, for the file backend, and Ring128
// (NewSQE128), with 128-byte SQEs for IORING_OP_URING_CMD and its 80-byte
// command area, used by package ublk.
package uring
