package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// goBench names one Go benchmark the harness runs and how to show it.
type goBench struct {
	pkg   string // package path relative to the module
	name  string // benchmark name as printed, without the -GOMAXPROCS suffix
	label string // table row
}

// softVsTCP are the 128 KiB soft provider vs raw TCP pair.
var softVsTCP = [2]goBench{
	{"./verbs/soft", "BenchmarkRead128K/TCP", "soft provider: RDMA READ 128 KiB, 8 outstanding, loopback TCP"},
	{"./verbs/soft", "BenchmarkRawTCP128K", "raw loopback TCP stream, 128 KiB writes"},
}

// microBenches are the per-I/O cost benchmarks.
var microBenches = []goBench{
	{"./target", "BenchmarkExecuteRead4KNull", "target core: 4 KiB read, null backend (per I/O)"},
	{"./target", "BenchmarkExecuteWrite4KNull", "target core: 4 KiB write, null backend (per I/O)"},
	{"./target", "BenchmarkExecuteRead4KNullMetered", "target core: 4 KiB read, null backend, namespace metered as a cluster volume is (per I/O)"},
	{"./target/rdma", "BenchmarkRead4KNull", "target RDMA transport + core + raw host, 4 KiB read, null, in-process fabric (per I/O)"},
	{"./test/e2e", "BenchmarkRead4K/rdma-default", "initiator + target end to end, 4 KiB read QD16, in-process fabric (per I/O)"},
	{"./target/tcp", "BenchmarkRead4KQD32", "target NVMe/TCP transport + core + raw host, 4 KiB read QD32, mem, loopback socket (per I/O)"},
	{"./test/e2e", "BenchmarkRead4K/tcp", "initiator + target end to end over NVMe/TCP, 4 KiB read QD16, loopback socket (per I/O)"},
	{"./verbs/soft", "BenchmarkWrite4K/Fabric", "soft provider: RDMA WRITE 4 KiB, in-process fabric (per WR)"},
	{"./verbs/soft", "BenchmarkSendRecv/Fabric", "soft provider: 64 B SEND/RECV, in-process fabric (per WR)"},
	{"./internal/replica", "BenchmarkMirrorLegSubmitWrite", "replicated write: mirror over a local mem copy and a remote copy through internal/replica (initiator, soft provider, in-process target), 4 KiB QD32 (per I/O; B/op is mem's one-time chunk allocation amortised)"},
	{"./internal/replica", "BenchmarkMirrorLegSubmitWriteFixed", "replicated write as an owner runs it: mirror over a local file copy (io_uring, WRITE_FIXED) and a remote copy sent zero copy from the same registered buffer, 4 KiB QD32 (per I/O; includes the local O_DIRECT write; B/op as above)"},
	{"./blockdev/file", "BenchmarkAsyncRead4K", "file backend io_uring path: 4 KiB O_DIRECT read, 32 in flight, sparse file (per I/O)"},
}

// benchSample is one result line.
type benchSample struct {
	nsPerOp, mbps, allocs float64
	hasMBps, hasAllocs    bool
}

func runGoBenches(ctx context.Context, o *options, rep *report) error {
	all := append([]goBench{softVsTCP[0], softVsTCP[1]}, microBenches...)
	rep.goRes = map[string][]benchSample{}
	// One go test run per benchmark: combined patterns match level by
	// level and can pick or drop sub-benchmarks unexpectedly.
	for _, b := range all {
		re := benchRegexp(b.name)
		logf("go test -bench %s %s", re, b.pkg)
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", re, "-benchmem",
			"-count", strconv.Itoa(o.repeats), "-benchtime", o.benchDur, b.pkg)
		cmd.Dir = o.root
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go test -bench %s %s: %v\n%s", re, b.pkg, err, out.String())
		}
		parseBench(out.String(), b.pkg, rep.goRes)
		if len(rep.goRes[b.pkg+" "+b.name]) == 0 {
			return fmt.Errorf("go test -bench %s %s: no result for %s\n%s", re, b.pkg, b.name, out.String())
		}
	}
	return nil
}

// benchRegexp anchors every slash-separated level of a benchmark name.
func benchRegexp(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parseBench collects the samples of every benchmark line, keyed by
// "pkg name".
func parseBench(out, pkg string, into map[string][]benchSample) {
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		var s benchSample
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			switch f[i+1] {
			case "ns/op":
				s.nsPerOp = v
			case "MB/s":
				s.mbps, s.hasMBps = v, true
			case "allocs/op":
				s.allocs, s.hasAllocs = v, true
			}
		}
		key := pkg + " " + m[1]
		into[key] = append(into[key], s)
	}
}
