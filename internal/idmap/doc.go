// Package idmap is an immutable map from IDs (QP numbers, namespace IDs)
// to values for a hot path that looks one up per I/O and usually holds a
// single entry: a Map of one entry answers with a comparison instead of a
// map access.
//
// Ownership: a Map is built once from a map its maker hands over and never
// changes; callers swap whole Maps (an atomic pointer, copy on write) and
// may read one from any goroutine. No goroutines, no buffers.
package idmap
