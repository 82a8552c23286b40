// Package null is a Backend that stores nothing: reads return zeroes,
// writes, flushes, zeroes and discards succeed without effect. It is the
// reference point for measuring the transport and target without storage
// cost.
//
// Ownership: ReadAt clears the caller's buffers and keeps no reference to
// them; WriteAt never reads or retains them. All methods are safe for
// concurrent use, never block and allocate nothing (NonBlocking reports
// true). Range, length and closed checks are the same as every other
// backend's, so the target's error paths can be exercised against it.
// Resize (blockdev.Resizer) only changes the capacity.
package null
