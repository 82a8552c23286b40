package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// options are the harness's flags.
type options struct {
	runtime time.Duration
	repeats int
	size    int64
	dir     string
	out     string
	skipFio bool
	skipGo  bool
	// skipCluster skips the cluster-volume vs static-volume rows.
	skipCluster bool
	keep        bool
	root        string // module root
	binDir      string // built binaries
	benchDur    string // go test -benchtime

	// skipTCP skips the NVMe/TCP loopback rows (tcp.go).
	skipTCP bool
	// skipRepl skips the 2-replica vs 1-replica volume rows.
	skipRepl bool
	// replPin is how the replicated rows place their processes
	// (replPlacements): "split" (node 1 and the load generator on CPU 0,
	// node 2 on CPU 1), "owner-alone", "none", a comma-separated list of
	// them, "both" or "all"; the row runs once per placement.
	replPin string
	// replProfile, when set, replaces the replicated rows' comparison by
	// one CPU-profiled randwrite run on the 2-replica volume; both
	// daemons' profiles are written to this directory.
	replProfile string
	// replProfileVol is the volume profiled: r2 (2 replicas) or r1.
	replProfileVol string
	// replQD overrides the queue depth of the replicated rows (0: 32),
	// for latency diagnostics (QD1).
	replQD int
	// replJobs is the number of `rdmablk bench` jobs (one I/O queue
	// each, QD each) of the replicated rows (0: 1); 2 is the lab's
	// replperf shape (fio QD32 × 2 jobs).
	replJobs int
	// replDir is where the replicated rows' nodes keep their volumes
	// ("auto": /dev/shm when it takes O_DIRECT, else the work directory).
	replDir string
	// replPollSpins, when non-zero, is both nodes' transport.poll_spins
	// in the replicated rows (negative: pollers sleep at once).
	replPollSpins int
	// replTransport is both nodes' cluster.replication.transport in the
	// replicated rows; with tcp each node also listens on NVMe/TCP.
	replTransport string
	// genCPUs confines `rdmablk bench` (nil: unpinned); set by a row.
	genCPUs cpuSet
}

func main() {
	var o options
	var quick bool
	var size string
	flag.DurationVar(&o.runtime, "runtime", 5*time.Second, "duration of each fio / rdmablk bench run")
	flag.IntVar(&o.repeats, "repeats", 3, "repeats of every measurement (median and spread)")
	flag.StringVar(&size, "size", "1G", "size of the data file (K/M/G)")
	flag.StringVar(&o.dir, "dir", "/var/tmp", "directory on a disk-backed filesystem for the data file")
	flag.StringVar(&o.out, "out", "", "results directory (default: test/bench/results in the module)")
	flag.BoolVar(&o.skipFio, "skip-io", false, "skip the fio / rdmablkd comparison (and CPU, memory)")
	flag.BoolVar(&o.skipGo, "skip-go", false, "skip the Go benchmarks")
	flag.BoolVar(&o.skipCluster, "skip-cluster", false, "skip the cluster volume vs static volume rows")
	flag.BoolVar(&o.skipTCP, "skip-tcp", false, "skip the NVMe/TCP loopback rows (rdmablk bench -t tcp vs fio)")
	flag.BoolVar(&o.skipRepl, "skip-replicated", false, "skip the 2-replica vs 1-replica volume rows (two-node cluster)")
	flag.StringVar(&o.replPin, "repl-pin", "split", "replicated rows' placements, comma-separated: split (node 1 + load generator on CPU 0, node 2 on CPU 1), owner-alone (node 1 on CPU 0, load generator + node 2 on CPU 1), one-cpu (all on CPU 0), none (unpinned); both = split,none; all")
	flag.StringVar(&o.replProfile, "repl-profile", "", "instead of the replicated rows, profile one 2-replica randwrite run; write both daemons' CPU profiles to this directory")
	flag.StringVar(&o.replProfileVol, "repl-profile-vol", "r2", "volume of -repl-profile: r2 (2 replicas) or r1 (1 replica)")
	flag.IntVar(&o.replQD, "repl-qd", 0, "queue depth of the replicated rows (0: 32, the goal's); QD1 shows the latency a replica adds")
	flag.StringVar(&o.replDir, "repl-dir", "auto", "directory of the replicated rows' volume files (auto: /dev/shm when it takes O_DIRECT, else -dir): both nodes' copies on one disk would make a 2-copy write two writes on the same device, which separate hosts do not")
	flag.IntVar(&o.replJobs, "repl-jobs", 0, "jobs (one I/O queue each, -repl-qd each) of the replicated rows (0: 1); 2 is the lab replperf's load (QD32 x 2 jobs)")
	flag.StringVar(&o.replTransport, "repl-transport", "auto", "cluster.replication.transport of the replicated rows: auto or rdma (the soft provider's listener) or tcp (each node also listens on NVMe/TCP, and the owner's leg to the copy uses it)")
	flag.IntVar(&o.replPollSpins, "repl-poll-spins", 0, "transport.poll_spins of both nodes in the replicated rows (0: the daemon's default; -1: pollers sleep at once)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (data file, config, logs)")
	flag.StringVar(&o.benchDur, "benchtime", "1s", "go test -benchtime for the Go benchmarks")
	flag.BoolVar(&quick, "quick", false, "smoke run: 2 s runs, 256 MiB file, 0.3 s benchtime")
	flag.Parse()
	if quick {
		o.runtime, size, o.benchDur = 2*time.Second, "256M", "300ms"
	}
	var err error
	if o.size, err = parseSize(size); err != nil {
		fatal(err)
	}
	if o.repeats < 1 {
		fatal(fmt.Errorf("-repeats %d", o.repeats))
	}
	if err := run(&o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func run(o *options) error {
	ctx := context.Background()
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	o.root = root
	if o.out == "" {
		o.out = filepath.Join(root, "test", "bench", "results")
	}
	work, err := os.MkdirTemp(o.dir, "rdmablk-bench-")
	if err != nil {
		return err
	}
	if !o.keep {
		defer os.RemoveAll(work)
	} else {
		logf("work directory kept: %s", work)
	}
	o.binDir = filepath.Join(work, "bin")
	rep := &report{start: time.Now().UTC(), loadBefore: loadAvg(), opts: o}
	rep.host = hostInfo()

	if !o.skipFio || !o.skipCluster || !o.skipRepl {
		logf("building rdmablkd and rdmablk")
		if err := buildBinaries(ctx, o); err != nil {
			return err
		}
	}
	if !o.skipFio {
		if err := ensureFio(ctx); err != nil {
			return err
		}
		if err := runIO(ctx, o, work, rep); err != nil {
			return err
		}
	}
	if !o.skipCluster {
		if err := runCluster(ctx, o, work, rep); err != nil {
			return fmt.Errorf("cluster volume: %w", err)
		}
	}
	if !o.skipRepl {
		if err := runReplicated(ctx, o, work, rep); err != nil {
			return fmt.Errorf("replicated volume: %w", err)
		}
	}
	if !o.skipGo {
		if err := runGoBenches(ctx, o, rep); err != nil {
			return err
		}
	}
	rep.loadAfter = loadAvg()
	rep.end = time.Now().UTC()
	md := rep.markdown()
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	name := filepath.Join(o.out, rep.start.Format("2006-01-02T150405Z")+".md")
	if err := os.WriteFile(name, []byte(md), 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	logf("written %s", name)
	return nil
}

// moduleRoot is the directory of the main module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run from inside the rdmablk module")
	}
	return filepath.Dir(mod), nil
}

func buildBinaries(ctx context.Context, o *options) error {
	for _, c := range []string{"rdmablkd", "rdmablk"} {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(o.binDir, c), "./cmd/"+c)
		cmd.Dir = o.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", c, err, out)
		}
	}
	return nil
}

// ensureFio installs fio with apt-get when it is missing.
func ensureFio(ctx context.Context) error {
	if _, err := exec.LookPath("fio"); err == nil {
		return nil
	}
	logf("fio missing: apt-get install -y fio")
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "fio")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("installing fio: %w", err)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	var n int64
	if _, err := fmt.Sscan(s, &n); err != nil || n <= 0 {
		return 0, fmt.Errorf("size %q", s)
	}
	return n * mult, nil
}
