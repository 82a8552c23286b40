// Package mem is a sparse in-memory Backend.
//
// Storage is kept in fixed-size chunks (64 KiB, or one block when blocks
// are larger) that are allocated on the first write that touches them, so
// an untouched volume costs a few words whatever its capacity: a 1 TiB
// volume that was never written uses no chunk memory. Reads of unwritten
// chunks return zeroes. WriteZeroes and Discard free every chunk they cover
// completely and clear the partly covered ones. Resize (blockdev.Resizer)
// frees the chunks past a shrunk end and clears the tail of the last one,
// so blocks read zeroes when the volume grows again; growing allocates
// nothing.
//
// Ownership: ReadAt copies into the caller's buffers and WriteAt copies out
// of them; neither keeps a reference after returning. The backend owns its
// chunks; Close drops them.
//
// Concurrency: every method is safe for concurrent use. A chunk's bytes are
// guarded by that chunk's lock, so concurrent I/O on overlapping ranges is
// free of data races (a multi-chunk I/O is not atomic as a whole). Methods
// never block on I/O (NonBlocking reports true); they hold locks only for
// the time of a copy. After the first write to a chunk, reads and writes
// allocate nothing.
package mem
