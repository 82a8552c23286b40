package syncbuf

import (
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentWriters: writes from many goroutines all arrive, whole,
// while another reads (-race).
func TestConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				fmt.Fprintf(&b, "g%d-%d;", g, i)
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := b.Count(";"); n != 800 {
		t.Fatalf("%d records, want 800", n)
	}
	if b.Count("g7-99;") != 1 {
		t.Fatal("a record is missing or torn")
	}
}
