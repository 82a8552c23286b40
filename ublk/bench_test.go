package ublk

import (
	"testing"
)

// BenchmarkQueueRoundTrip measures one request through the queue state
// machine (fake kernel: descriptor, parse, backend Submit, Complete,
// COMMIT_AND_FETCH) and checks it allocates nothing. Run with
// -benchtime=1x to check allocations only; the fake kernel's locking
// dominates the time.
func BenchmarkQueueRoundTrip(b *testing.B) {
	r := startQueue(b, 1)
	k, be := r.k, r.b
	<-k.events
	d := ioDesc{opFlags: iodOpRead, nrSectors: 8}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		k.issue(b, 0, d)
		s := <-be.subs
		be.done.Complete(s.tag, 0)
		<-k.events
	}
	b.StopTimer()
	k.abortAll()
	<-r.done
}
