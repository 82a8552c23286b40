package freelist

import (
	"runtime"
	"testing"
)

var runtimeGosched = runtime.Gosched

// BenchmarkTryGetPut is one take and give back, as a replicated write
// does per free list; BenchmarkChannel is the buffered channel it
// replaces, for comparison.
func BenchmarkTryGetPut(b *testing.B) {
	l := New([]*int{new(int), new(int)})
	b.ReportAllocs()
	for b.Loop() {
		v, _ := l.TryGet()
		l.Put(v)
	}
}

func BenchmarkChannel(b *testing.B) {
	c := make(chan *int, 2)
	c <- new(int)
	c <- new(int)
	b.ReportAllocs()
	for b.Loop() {
		var v *int
		select {
		case v = <-c:
		default:
		}
		c <- v
	}
}
