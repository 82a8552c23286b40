// Package faulty wraps a blockdev.Backend and injects failures and stalls,
// so that the target's error and in-flight paths can be tested.
//
// Rules say which calls they apply to (operation kinds, an LBA range, every
// Nth matching call, at most N times) and what happens: fail with an error
// before touching the inner backend, fail after the inner call succeeded
// (the data landed but the host is told it did not), or stall until the
// test releases the call. Requests the inner backend rejects (out of
// range, partial blocks) are passed through untouched, as a device checks
// the command before touching media. With no rules installed every call goes straight
// to the inner backend and nothing is allocated.
//
// Ownership: buffers are passed through to the inner backend unchanged;
// faulty neither copies nor retains them. Close closes the inner backend.
//
// Concurrency: all methods, including Inject, Remove and Clear, are safe
// for concurrent use; rule changes apply to calls that start afterwards.
// A stalled call blocks its goroutine, so NonBlocking reports false while
// a stalling rule is installed.
package faulty
