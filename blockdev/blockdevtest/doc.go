// Package blockdevtest is the contract suite every blockdev.Backend passes.
//
// A backend's own tests call Run with a function that creates a fresh,
// zero-filled backend of a requested geometry, and with Caps describing
// what the backend promises. Run runs one subtest per property, for block
// sizes 512 and 4096, each on its own backend, and closes each backend
// when its subtest ends (a backend the subtest already closed is fine).
//
// Properties checked: geometry; a fresh device reads zeroes; single and
// vectored round trips (pieces may straddle blocks, empty pieces are
// ignored, vectors longer than 64 pieces); a total that is not whole
// blocks fails with ErrUnaligned and writes nothing; ranges past the end,
// and lba+n that wraps 2^64, fail with ErrOutOfRange and write nothing;
// empty requests succeed at lba <= Blocks; FUA writes and Flush; WriteZeroes
// and Discard read back zeroes (unless Caps says otherwise) and leave
// neighbouring blocks alone; concurrent writers on disjoint ranges; every
// method, a second Close included, returns ErrClosed after Close; and,
// with Caps.Reopen, that flushed, FUA and pre-Close writes and zeroes
// survive a reopen; the optional capabilities listed in Caps are exposed;
// and, for a blockdev.Resizer, that shrinking and growing in place keep
// the data below the smaller size, read zeroes past the old end (also
// where data was before a shrink), move the range checks, and leave the
// capabilities — and the async and fixed-buffer I/O the backend took
// before — working after.
//
// The suite's buffers are 4096-byte aligned (see AlignedBuffer) so that
// backends with a direct-I/O path exercise it; the partial-block vectors it
// also sends exercise their fallback paths.
//
// The suite never sleeps; concurrency tests use goroutines and WaitGroups,
// and are meant to run under -race.
package blockdevtest
