package bench

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

const testNQN = "nqn.2026-11.io.rdmablk:bench"

// connectMem serves a 1 MiB memory namespace over the soft provider and
// connects one I/O queue of depth depth to it.
func connectMem(t *testing.T, depth int) (*initiator.Controller, *initiator.Namespace) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	tgt := target.New(target.Options{Logger: log})
	if _, err := tgt.AddSubsystem(target.SubsystemConfig{NQN: testNQN, Serial: "b1", AllowAnyHost: true,
		Namespaces: []target.NamespaceConfig{{NSID: 1, Backend: mem.New(2048, 512)}}}); err != nil {
		t.Fatal(err)
	}
	p := soft.New(soft.Options{})
	l, err := rdma.Listen(rdma.Config{Provider: p, Target: tgt, Addr: "127.0.0.1:0", PortID: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); tgt.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := initiator.Connect(ctx, l.Addr(), testNQN, initiator.Options{Provider: soft.New(soft.Options{}), IOQueues: 1, QueueDepth: depth})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ns, err := c.Namespace(1)
	if err != nil {
		t.Fatal(err)
	}
	return c, ns
}

// TestRunReportsTheDepthThatRan: asking for more outstanding I/Os than
// the queue holds runs at the queue's depth and says so.
func TestRunReportsTheDepthThatRan(t *testing.T) {
	c, ns := connectMem(t, 8)
	depth := c.Queue(0).Depth()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := Config{Pattern: "rand", RW: "mixed", ReadPercent: 50, BlockSize: 4096, QueueDepth: 1000, Jobs: 1}
	// Stop after the first progress report: the count, not the time, matters.
	res, err := Run(ctx, c, ns, cfg, time.Millisecond, func(Snapshot) { cancel() })
	if err != nil {
		t.Fatal(err)
	}
	if res.QueueDepth != depth || depth >= 1000 {
		t.Errorf("ran at depth %d, queue depth %d", res.QueueDepth, depth)
	}
	if res.Errors != 0 || res.IOs == 0 {
		t.Errorf("%d I/Os, %d errors (%v)", res.IOs, res.Errors, res.FirstError)
	}
}

func TestRunRefusesWhatItCannotHonour(t *testing.T) {
	c, ns := connectMem(t, 8)
	base := Config{Pattern: "seq", RW: "mixed", ReadPercent: 70, BlockSize: 4096, QueueDepth: 4, Jobs: 1}
	for name, mod := range map[string]func(*Config){
		"ReadPercentAbove100": func(c *Config) { c.ReadPercent = 101 },
		"ReadPercentNegative": func(c *Config) { c.ReadPercent = -1 },
		"NegativeDuration":    func(c *Config) { c.Duration = -time.Second },
		"MoreJobsThanQueues":  func(c *Config) { c.Jobs = 2 },
		"UnalignedBlockSize":  func(c *Config) { c.BlockSize = 1000 },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			mod(&cfg)
			if _, err := Run(context.Background(), c, ns, cfg, 0, nil); !errors.Is(err, ErrConfig) {
				t.Fatalf("Run: %v, want ErrConfig", err)
			}
		})
	}
}

func TestFormatLatency(t *testing.T) {
	for d, want := range map[time.Duration]string{
		812: "812ns", 87300: "87.3µs", 1254321: "1.25ms", 999999: "1.00ms", 999: "999ns", 999600: "1.00ms", 12345678: "12.3ms",
		2012345678: "2.01s", 5 * time.Microsecond: "5.00µs", 0: "0ns",
	} {
		if got := FormatLatency(d); got != want {
			t.Errorf("FormatLatency(%d) = %q, want %q", d, got, want)
		}
	}
}
