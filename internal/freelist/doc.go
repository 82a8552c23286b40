// Package freelist is a fixed pool of reusable items (request slots,
// operation records) that any number of goroutines take and give back:
// the free list of a hot I/O path, where a buffered channel used as one
// costs two channel operations per I/O, each with the channel's lock,
// and a mutex around a slice costs two uncontended lock pairs.
//
// # Semantics
//
// TryGet never waits. Get and Take wait for an item; Put hands an item to
// the longest waiting Get or Take first (in arrival order, as a channel
// would), so a waiter is never starved by TryGet callers that keep
// finding items first. Close makes every waiting and later Get return
// false at once; Take ignores Close (a drain that must hold every item
// until the holders have given them back). Items keep flowing after
// Close: Put, TryGet and Take still work.
//
// # Ownership, goroutines, memory
//
// The list holds the free items; an item taken is owned by its taker
// until Put. No goroutines. TryGet and Put allocate nothing; a Get or
// Take that has to wait allocates its waiter (the slow path only).
package freelist
