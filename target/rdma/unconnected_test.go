package rdma

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
)

// silent dials a queue from host that never sends a Fabrics Connect.
func (g *rig) silent(host string) (*rawHost, error) {
	h, err := g.dial(rawOpts{qid: 1, depth: 32, local: host + ":0"})
	if err == nil {
		g.t.Cleanup(h.close)
	}
	return h, err
}

// waitStats waits until cond holds for the listener's stats (the poller
// and setup goroutines update them asynchronously).
func (g *rig) waitStats(what string, cond func(Stats) bool) Stats {
	g.t.Helper()
	for {
		st := g.l.Stats()
		if cond(st) {
			return st
		}
		select {
		case <-g.ctx.Done():
			g.t.Fatalf("%s: stats %+v", what, st)
		case <-time.After(time.Millisecond):
		}
	}
}

// Issue 10 item 2: connections that never send a Fabrics Connect are
// capped per host and in total, pin only their receive buffers (no data
// buffers before Connect), and do not keep a real host out.
func TestSilentQueuesCapped(t *testing.T) {
	const perHost, total = 8, 12
	g := newRig(t, rigOpts{cfg: Config{
		ConnectTimeout:        -1, // this test is about the caps alone
		MaxUnconnectedPerHost: perHost,
		MaxUnconnectedQueues:  total,
	}})
	for i := range perHost {
		if _, err := g.silent("10.9.9.9"); err != nil {
			t.Fatalf("silent queue %d: %v", i, err)
		}
	}
	_, err := g.silent("10.9.9.9")
	if st := rejectStatus(t, err); st != nvme.CMRejectNoResources {
		t.Fatalf("queue %d from one host: reject status %d, want no resources", perHost+1, st)
	}
	st := g.l.Stats()
	if st.Unconnected != perHost || st.UnconnectedRejected != 1 {
		t.Fatalf("stats %+v", st)
	}
	// Silent queues pin their receive and CQE buffers only: all of them
	// together less than one queue's data buffers.
	perQueue := st.RegisteredBytes / perHost
	if dataBytes := uint64(32 * DefaultMaxDataTransfer); st.RegisteredBytes >= dataBytes || perQueue > 512<<10 {
		t.Fatalf("%d silent queues registered %d bytes (%d each); one queue's data buffers are %d",
			perHost, st.RegisteredBytes, perQueue, dataBytes)
	}

	// Another host connects and does I/O while the flood holds its cap.
	io := g.enabledIOQueue(rawOpts{qid: 1, depth: 32, local: "10.7.7.7:0"})
	s := io.ioSQE(nvme.IORead, 9, 0, 4096, 0, 0)
	io.mustOK(g.ctx, &s, nil)
	st = g.waitStats("connected queues leave the unconnected count", func(s Stats) bool { return s.Unconnected == perHost })
	// Each connected queue registered its first chunk of data buffers.
	_, _, _, adminBoot := smallLayout(32, 0)
	chunk := uint64(min(32, growChunkBytes/smallDataSize) * smallDataSize) // small buffers, depth 32 (the 4 KiB read took one)
	if want := perHost*perQueue + perQueue + uint64(adminBoot+bootSize) + 2*chunk; st.RegisteredBytes != want {
		t.Fatalf("registered %d bytes after two connected queues, want %d", st.RegisteredBytes, want)
	}

	// The total cap: four more silent queues from elsewhere fill it.
	for i := range total - perHost {
		if _, err := g.silent("10.8.8.8"); err != nil {
			t.Fatalf("silent queue %d from a second host: %v", i, err)
		}
	}
	_, err = g.silent("10.6.6.6")
	if st := rejectStatus(t, err); st != nvme.CMRejectNoResources {
		t.Fatalf("queue past the total cap: reject status %d", st)
	}
	if st := g.l.Stats(); st.Unconnected != total || st.UnconnectedRejected != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// Issue 10 item 2: a queue without a Fabrics Connect is disconnected after
// ConnectTimeout, which frees its place under the caps.
func TestSilentQueuesTimedOut(t *testing.T) {
	const perHost = 4
	g := newRig(t, rigOpts{cfg: Config{
		ConnectTimeout:        50 * time.Millisecond,
		MaxUnconnectedPerHost: perHost,
	}})
	var hs []*rawHost
	for i := range perHost {
		h, err := g.silent("10.9.9.9")
		if err != nil {
			t.Fatalf("silent queue %d: %v", i, err)
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		if _, err := h.response(g.ctx); !errors.Is(err, errQueueDead) {
			t.Fatalf("silent queue %d: %v, want it disconnected", i, err)
		}
	}
	g.waitQueues(0)
	st := g.l.Stats()
	if st.ConnectTimeouts != perHost || st.Unconnected != 0 || st.RegisteredBytes != 0 || st.Queues != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The host's places are free again.
	for i := range perHost {
		if _, err := g.silent("10.9.9.9"); err != nil {
			t.Fatalf("queue %d after the timeouts: %v", i, err)
		}
	}
}
