// Package blockdevtest is the contract suite every blockdev.Backend passes.
//
// A backend's own tests call Run with a function that creates a fresh,
// zero-filled backend of a requested geometry, and with Caps describing
// what the backend promises. Run runs one subtest per property, for block
// sizes 512 and 4096, each on its own backend, and closes each backend
// when its subtest ends (a backend the subtest already closed is fine).
//
// The suite's buffers are 4096-byte aligned (see AlignedBuffer) so that
// backends with a direct-I/O path exercise it; the partial-block vectors it
// also sends exercise their fallback paths.
//
// The suite never sleeps; concurrency tests use goroutines and WaitGroups,
// and are meant to run under -race.
package blockdevtest
