package ublk

import (
	"sync"
	"syscall"
	"testing"
)

// TestCompRing: producers on several goroutines, each completing its own
// tags over and over, the consumer re-arming a tag only after popping
// it (the queue's bound): every completion arrives exactly once, with
// its errno, across many laps of the ring.
func TestCompRing(t *testing.T) {
	const depth, producers, laps = 6, 3, 2000 // capacity 8: cells reused by other tags
	r := newCompRing(depth)
	if len(r.cells) != 8 {
		t.Fatalf("capacity %d for depth %d, want 8", len(r.cells), depth)
	}
	if _, ok := r.pop(); ok {
		t.Fatal("pop from an empty ring")
	}
	arm := make([]chan int, depth) // the consumer hands a tag back to its producer
	for i := range arm {
		arm[i] = make(chan int, 1)
	}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tag := p; tag < depth; tag += producers {
				for lap := range laps {
					if lap > 0 {
						<-arm[tag]
					}
					r.push(completion{tag: uint16(tag), errno: syscall.Errno(lap % 7)})
				}
			}
		}()
	}
	got := make([]int, depth)
	for n := 0; n < depth*laps; {
		c, ok := r.pop()
		if !ok {
			continue
		}
		n++
		tag := int(c.tag)
		if want := syscall.Errno(got[tag] % 7); c.errno != want {
			t.Fatalf("tag %d lap %d: errno %d, want %d", tag, got[tag], c.errno, want)
		}
		if got[tag]++; got[tag] < laps {
			arm[tag] <- tag
		}
	}
	wg.Wait()
	if _, ok := r.pop(); ok {
		t.Fatal("a completion left over")
	}
	for tag, n := range got {
		if n != laps {
			t.Fatalf("tag %d completed %d times, want %d", tag, n, laps)
		}
	}
}

// TestCompRingHalfPushed: a pop stops at a cell whose producer has
// reserved it but not yet published it, even with a later completion
// published, and takes both in order once the first is published.
func TestCompRingHalfPushed(t *testing.T) {
	r := newCompRing(4)
	pos := r.tail.Add(1) - 1 // a producer reserves cell 0 and stops there
	r.push(completion{tag: 2, errno: 5})
	if _, ok := r.pop(); ok {
		t.Fatal("pop passed a reserved, unpublished cell")
	}
	cell := &r.cells[pos&r.mask]
	cell.c = completion{tag: 1}
	cell.seq.Store(pos + 1)
	for _, want := range []completion{{tag: 1}, {tag: 2, errno: 5}} {
		if c, ok := r.pop(); !ok || c != want {
			t.Fatalf("pop = %+v %v, want %+v", c, ok, want)
		}
	}
	if _, ok := r.pop(); ok {
		t.Fatal("a completion left over")
	}
}
