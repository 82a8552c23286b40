package main

import (
	"fmt"
	"strings"
	"testing"
)

// The NVMe/TCP section pairs each repeat's TCP run with the same repeat's
// fio and soft RDMA runs, and says why the kernel host is not run.
func TestTCPMarkdown(t *testing.T) {
	j := ioJobs[0]
	r := &report{io: []ioResult{{
		job:  j,
		fio:  []ioRun{{iops: 1000, bytes: 1e9}, {iops: 2000, bytes: 1e9}, {iops: 1000, bytes: 1e9}},
		ours: []ioRun{{iops: 500, bytes: 1e9}, {iops: 500, bytes: 1e9}, {iops: 1000, bytes: 1e9}},
		tcp: []ioRun{
			{iops: 800, bytes: 2e9, cpuTgt: 2, cpuInit: 4},
			{iops: 1000, bytes: 2e9, cpuTgt: 2, cpuInit: 4},
			{iops: 900, bytes: 2e9, cpuTgt: 2, cpuInit: 4},
		},
	}, {job: ioJobs[2], fio: []ioRun{{iops: 1}}, ours: []ioRun{{iops: 1}}}}}
	var b strings.Builder
	r.tcpMarkdown(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) })
	out := b.String()
	for _, want := range []string{
		// per repeat: 0.8, 0.5, 0.9 of fio; 1.6, 2.0, 0.9 of soft RDMA
		"| 4 KiB randread QD32 | 1000 (1000–2000) | 900 (800–1000) | 0.80 (0.50–0.90) | 1.60 (0.90–2.00) | 1.00 (1.00–1.00) / 0.00 (0.00–0.00) | 2.00 (2.00–2.00) / 0.00 (0.00–0.00) |",
		"The kernel nvme-tcp host cannot be run here: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("section lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, ioJobs[2].name) {
		t.Errorf("a job without TCP runs has a row:\n%s", out)
	}

	var none strings.Builder
	(&report{io: []ioResult{{job: j, fio: []ioRun{{iops: 1}}, ours: []ioRun{{iops: 1}}}}}).tcpMarkdown(
		func(f string, a ...any) { fmt.Fprintf(&none, f, a...) })
	if none.Len() != 0 {
		t.Errorf("-skip-tcp run has a section:\n%s", none.String())
	}
}
