package verifyload

import (
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/initiator"
)

// WaitPath waits until path i of s is in state st (and preferred when
// pref), waking on s.Changed; it fails the test after timeout.
func WaitPath(t testing.TB, s *initiator.Session, i int, st initiator.PathState, pref bool, timeout time.Duration) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		ch := s.Changed()
		p := s.Paths()[i]
		if p.State == st && (!pref || p.Preferred) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("path %d: %+v, want %v preferred=%v", i, p, st, pref)
		}
	}
}
