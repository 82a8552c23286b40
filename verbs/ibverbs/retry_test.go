//go:build ibverbs

package ibverbs

import (
	"bytes"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The rdma_cm event loop's error policy: never give up, back off
// exponentially up to a cap, reset on success, log once per interval.
func TestEventRetry(t *testing.T) {
	var logs bytes.Buffer
	r := eventRetry{log: slog.New(slog.NewTextHandler(&logs, nil))}
	now := time.Unix(1000, 0)
	want := eventBackoffMin
	for i := range 12 {
		if d := r.failed(syscall.ENOMEM, now); d != want {
			t.Fatalf("error %d: back-off %v, want %v", i, d, want)
		}
		want = min(2*want, eventBackoffMax)
		now = now.Add(time.Millisecond)
	}
	if n := strings.Count(logs.String(), "rdma_get_cm_event failed"); n != 1 {
		t.Fatalf("%d log lines for a burst of 12 errors, want 1:\n%s", n, logs.String())
	}
	now = now.Add(eventLogEvery)
	r.failed(syscall.EMFILE, now)
	if !strings.Contains(logs.String(), "suppressed=11") {
		t.Fatalf("second log line does not count the suppressed errors:\n%s", logs.String())
	}
	r.ok()
	if d := r.failed(syscall.ENOBUFS, now); d != eventBackoffMin {
		t.Fatalf("back-off after a success: %v, want %v", d, eventBackoffMin)
	}
	if r.errors != 14 {
		t.Fatalf("errors = %d, want 14", r.errors)
	}
}
