package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// clusterNQN is the subsystem the cluster serves the volume under; the
// static subsystem benchNQN serves the same file from the daemon config.
const clusterNQN = "nqn.2026-11.io.rdmablk:bench-cluster"

// goalCluster: a cluster volume keeps at least this share of a static
// volume's IOPS on the same file (issue 12 item 5).
const goalCluster = 0.95

// clusterJobs are the rows of the cluster-vs-static comparison.
var clusterJobs = ioJobs[:2]

// clusterResult is one job's runs, static and cluster, one per repeat.
type clusterResult struct {
	job             ioJob
	static, cluster []ioRun
}

// runCluster starts one single-node cluster daemon that serves the same
// file twice — as a static volume from its config and as a cluster
// volume created through the control API (reconciler, catalogue) — and
// runs `rdmablk bench` against each, alternating, repeats times.
func runCluster(ctx context.Context, o *options, work string, rep *report) error {
	dataDir := filepath.Join(work, "cluster-node")
	// blockdev/file under the cluster agent: <data_dir>/cluster/volumes/<name>.img.
	data := filepath.Join(dataDir, "cluster", "volumes", "bench.img")
	if err := os.MkdirAll(filepath.Dir(data), 0o750); err != nil {
		return err
	}
	logf("cluster: writing the %d MiB data file %s", o.size>>20, data)
	if err := writeDataFile(data, o.size); err != nil {
		return err
	}
	ports := make([]int, 3)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	apiAddr := fmt.Sprintf("127.0.0.1:%d", ports[2])
	cfg := fmt.Sprintf(`log:
  level: warn
data_dir: %s
transport:
  provider: soft
  profile: default
listeners:
  - addr: %s
volumes:
  - name: static
    path: %s
    size: %dM
    block_size: 4096
subsystems:
  - nqn: %s
    serial: bench0001
    allow_any_host: true
    namespaces:
      - nsid: 1
        volume: static
cluster:
  enabled: true
  node_id: bench
  raft_bind: 127.0.0.1:%d
  api_bind: %s
  bootstrap: true
`, dataDir, addr, data, o.size>>20, benchNQN, ports[1], apiAddr)
	d, err := startDaemonConfig(ctx, o, work, "rdmablkd-cluster", addr, cfg)
	if err != nil {
		return err
	}
	defer d.stop()

	admin := func(args ...string) error {
		cmd := exec.CommandContext(ctx, filepath.Join(o.binDir, "rdmablk"), append([]string{"--api", apiAddr}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("rdmablk %v: %v\n%s", args, err, out.String())
		}
		return nil
	}
	// The raft leader comes up after the listener: poll the API (an
	// external process, not test synchronisation).
	if err := retry(30*time.Second, func() error { return admin("volume", "list") }); err != nil {
		return err
	}
	for _, args := range [][]string{
		{"volume", "create", "bench", "--size", strconv.FormatInt(o.size>>20, 10) + "M", "--block-size", "4096"},
		{"subsystem", "create", clusterNQN, "--allow-any-host"},
		{"subsystem", "add-ns", clusterNQN, "bench"},
	} {
		if err := retry(30*time.Second, func() error { return admin(args...) }); err != nil {
			return err
		}
	}
	if err := waitServed(ctx, o, d, clusterNQN, 30*time.Second); err != nil {
		return fmt.Errorf("cluster volume never served: %w", err)
	}
	for _, j := range clusterJobs {
		res := clusterResult{job: j}
		for i := range o.repeats {
			logf("cluster vs static: %s: repeat %d/%d", j.name, i+1, o.repeats)
			// Alternate which side goes first (A B, B A, ...): the first
			// run of a pair warms the page cache and the allocator for
			// the second.
			first, second := benchNQN, clusterNQN
			if i%2 == 1 {
				first, second = second, first
			}
			a, err := runOursNQN(ctx, o, d, j, first)
			if err != nil {
				return err
			}
			b, err := runOursNQN(ctx, o, d, j, second)
			if err != nil {
				return err
			}
			s, c := a, b
			if i%2 == 1 {
				s, c = b, a
			}
			res.static = append(res.static, s)
			res.cluster = append(res.cluster, c)
		}
		rep.cluster = append(rep.cluster, res)
	}
	return nil
}

// retry calls f until it succeeds or d has passed, and returns its last
// error.
func retry(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // polling an external process
	}
}

// waitServed retries a 200 ms 4 KiB read job against nqn on d until one
// succeeds (a volume the cluster just created is being reconciled) or
// timeout passes.
func waitServed(ctx context.Context, o *options, d *daemon, nqn string, timeout time.Duration) error {
	probe := ioJob{name: "probe", pattern: "rand", rw: "read", bs: 4096, qd: 1}
	short := *o
	short.runtime = 200 * time.Millisecond
	return retry(timeout, func() error { _, err := runOursNQN(ctx, &short, d, probe, nqn); return err })
}
