package initiator

import (
	"sync"
	"sync/atomic"
	"testing"
)

// TestTakeKeepsClosedIntakeClosed: take runs on a Flush's goroutine too,
// possibly after the queue goroutine's shut closed the intake; it must
// never reopen it, or a push racing it would be accepted and then lost
// when the intake closes again (its request would never complete). A
// pusher hammers a closed intake while take runs: nothing may be
// accepted. (Found in review: take used Swap(nil) then Store(closed).)
func TestTakeKeepsClosedIntakeClosed(t *testing.T) {
	m := &queueMux{}
	m.head.Store(muxClosed) // shut has run
	var accepted atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if m.pushQuiet(new(cmd)) {
				accepted.Add(1)
			}
		}
	}()
	for range 200_000 {
		m.take()
	}
	close(stop)
	wg.Wait()
	if n := accepted.Load(); n != 0 || m.head.Load() != muxClosed || m.fifo != nil {
		t.Fatalf("a closed intake accepted %d commands (head closed at the end: %v, FIFO empty: %v)", n, m.head.Load() == muxClosed, m.fifo == nil)
	}
}
