package daemon

import (
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev/file"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestStartFailureClosesWhatItOpened: a start-up failure after volumes
// were opened returns the error naming the setting (no panic) and leaves
// no file descriptor of those volumes, the provider or the target open.
func TestStartFailureClosesWhatItOpened(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	cases := []struct {
		name string
		cfg  func(*Config)
		want string
	}{
		{"ListenerInUse", func(c *Config) {
			c.Listeners = append(c.Listeners, ListenerConfig{Addr: busy.Addr().String()})
		}, `listeners[1].addr "` + busy.Addr().String() + `" (--listen): address already in use`},
		{"SecondVolumeMissingDir", func(c *Config) {
			c.Volumes = append(c.Volumes, VolumeConfig{Name: "c", Path: filepath.Join(dir, "missing", "c.img"), Size: "1M"})
		}, `volumes[2] "c": path`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Load(NewViper(), []string{"127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			cfg.DataDir = dir
			cfg.Metrics.Listen = ""
			cfg.Volumes = []VolumeConfig{{Name: "a", Path: "a.img", Size: "1M"}, {Name: "b", Path: "b.img", Size: "1M"}}
			cfg.Subsystems = []SubsysConfig{{NQN: "nqn.2026-11.io.rdmablk:t", AllowAnyHost: true,
				Namespaces: []NSConfig{{NSID: 1, Volume: "a"}, {NSID: 2, Volume: "b"}}}}
			tc.cfg(cfg)
			if err := os.WriteFile(filepath.Join(dir, "a.img"), make([]byte, 1<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			// The file backends' shared io_uring rings live as long as the
			// process (blockdev/file DefaultRingGroup), like the runtime's
			// epoll descriptor: make them before counting.
			if _, err := file.DefaultRingGroup(); err != nil {
				t.Fatal(err)
			}
			before := openFDs(t)
			d, err := Start(cfg, slog.New(slog.DiscardHandler))
			if err == nil {
				d.Close()
				t.Fatal("Start succeeded")
			}
			if d != nil {
				t.Error("Start returned a Daemon with its error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if after := openFDs(t); after != before {
				t.Errorf("%d file descriptors open after the failed Start, %d before", after, before)
			}
			// a.img existed before this start and stays; b.img was created
			// by it and is removed again.
			if _, err := os.Stat(filepath.Join(dir, "a.img")); err != nil {
				t.Errorf("a.img, which existed before, is gone: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "b.img")); !os.IsNotExist(err) {
				t.Errorf("b.img, created by the failed start, is still there (%v)", err)
			}
		})
	}
}

// TestMetricsAddressInUseKeepsServing: the metrics endpoint is off the
// data path, so a busy metrics address is logged and storage still starts.
func TestMetricsAddressInUseKeepsServing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cfg, err := Load(NewViper(), []string{"127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.DataDir = t.TempDir()
	cfg.Metrics.Listen = busy.Addr().String()
	var logged strings.Builder
	d, err := Start(cfg, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if d.MetricsAddr() != "" || len(d.Addrs()) != 1 {
		t.Errorf("metrics at %q, listeners %v", d.MetricsAddr(), d.Addrs())
	}
	if err := d.Close(); err != nil { // before reading the log: nothing logs after Close
		t.Fatal(err)
	}
	if !strings.Contains(logged.String(), "metrics endpoint not started") || !strings.Contains(logged.String(), "address already in use") {
		t.Errorf("busy metrics address not logged:\n%s", logged.String())
	}
}
