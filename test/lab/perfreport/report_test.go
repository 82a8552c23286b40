package main

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		in            []float64
		med, min, max float64
	}{
		{[]float64{3, 1, 2}, 2, 1, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		s := summarize(c.in)
		if s.med != c.med || s.min != c.min || s.max != c.max || s.n != len(c.in) {
			t.Errorf("summarize(%v) = %+v", c.in, s)
		}
	}
	if s := summarize(nil); s.n != 0 || s.String() != "-" {
		t.Errorf("summarize(nil) = %+v %q", s, s)
	}
}

// Two rounds, two targets, one backing: the table must pair rounds, divide busy jiffies by HZ and
// by the I/O count, and report the idle CPU share.
func TestReport(t *testing.T) {
	fsys := fstest.MapFS{
		"target.hz":    {Data: []byte("100\n")},
		"serve.1":      {Data: []byte("1 brd ours\n")},
		"serve.2":      {Data: []byte("1 brd kernel\n")},
		"serve.3":      {Data: []byte("2 brd kernel\n")},
		"serve.4":      {Data: []byte("2 brd ours\n")},
		"serve.1.done": {Data: nil},
		// ours: 200 jiffies = 2 s for 20,000 I/Os = 100 µs per I/O; kernel 1 s per 20,000 = 50 µs
		"job.1.rr32.r1.cpu": {Data: []byte("200 150\n")},
		"job.2.rr32.r1.cpu": {Data: []byte("100 0\n")},
		"job.3.rr32.r2.cpu": {Data: []byte("100 0\n")},
		"job.4.rr32.r2.cpu": {Data: []byte("200 150\n")},
		"job.1.idle.r1.cpu": {Data: []byte("50 10\n")},
		"job.2.idle.r1.cpu": {Data: []byte("20 0\n")},
		"results.txt": {Data: []byte(strings.Join([]string{
			"perf.ours.brd.connect_s.r1 1.50",
			"perf.ours.brd.rr32.r1.iops 2000", "perf.ours.brd.rr32.r1.ios 20000",
			"perf.ours.brd.rr32.r1.p50_us 400", "perf.ours.brd.rr32.r1.p99_us 900", "perf.ours.brd.rr32.r1.err 0",
			"perf.kernel.brd.rr32.r1.iops 1000", "perf.kernel.brd.rr32.r1.ios 20000",
			"perf.kernel.brd.rr32.r1.p50_us 800", "perf.kernel.brd.rr32.r1.p99_us 1500", "perf.kernel.brd.rr32.r1.err 0",
			"perf.kernel.brd.rr32.r2.iops 1000", "perf.kernel.brd.rr32.r2.ios 20000", "perf.kernel.brd.rr32.r2.err 0",
			"perf.ours.brd.rr32.r2.iops 3000", "perf.ours.brd.rr32.r2.ios 20000", "perf.ours.brd.rr32.r2.err 5",
			"perf.ours.brd.verify.err 0",
			"RESULT noise",
		}, "\n"))},
	}
	r, err := load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	if r.rounds != 2 || len(r.backings) != 1 || r.backings[0] != "brd" {
		t.Fatalf("rounds %d backings %v", r.rounds, r.backings)
	}
	var b strings.Builder
	write(&b, r)
	out := b.String()
	for _, want := range []string{
		"| 4 KiB randread QD32 ×2 jobs | 2500 (2000–3000) | 1000 (1000–1000) | 2.50 (2.00–3.00) |",
		"| 400 / 800 | 900 / 1500 |",                        // p50/p99 only where reported (one round each)
		"| 100.0 (100.0–100.0) / 50.0 (50.0–50.0) | 0.50 |", // CPU per I/O and IOPS per CPU-s
		"target guest busy 5.0 % of one CPU with rdmablkd (rdmablkd itself 1.0 %), 2.0 % with nvmet-rdma",
		"Connect time (s): rdmablkd 1.50, nvmet-rdma -",
		"fio err rdmablkd 0, nvmet-rdma -",
		"fio errors: ours rr32 r2 err=5.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// perfFS is a one-round run of one backing with a transport file holding tr ("" for none).
func perfFS(tr string) fstest.MapFS {
	fsys := fstest.MapFS{
		"serve.1":          {Data: []byte("1 null ours\n")},
		"serve.2":          {Data: []byte("1 null kernel\n")},
		"job.1.rr1.r1.cpu": {Data: []byte("100 80\n")},
		"job.2.rr1.r1.cpu": {Data: []byte("50 0\n")},
		"results.txt": {Data: []byte(strings.Join([]string{
			"perf.ours.null.connect_s.r1 0.40", "perf.kernel.null.connect_s.r1 0.30",
			"perf.ours.null.rr1.r1.iops 300", "perf.ours.null.rr1.r1.ios 3000", "perf.ours.null.rr1.r1.err 0",
			"perf.kernel.null.rr1.r1.iops 200", "perf.kernel.null.rr1.r1.ios 3000", "perf.kernel.null.rr1.r1.err 0",
			"perf.ours.null.verify.err 0", "perf.kernel.null.verify.err 0",
		}, "\n"))},
	}
	if tr != "" {
		fsys["transport"] = &fstest.MapFile{Data: []byte(tr + "\n")}
	}
	return fsys
}

func report(t *testing.T, fsys fstest.MapFS) string {
	t.Helper()
	r, err := load(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	write(&b, r)
	return b.String()
}

// The NVMe/TCP variant (run.sh perf-tcp) says so: nvmet-tcp as the kernel target in the header,
// the idle, connect and verify lines, and TCP on the backing heading and every row; nothing says
// nvmet-rdma.
func TestReportTCP(t *testing.T) {
	out := report(t, perfFS("tcp"))
	for _, want := range []string{
		"Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener and against nvmet-tcp",
		"### Backing: null (TCP)",
		"| job | rdmablkd (TCP) IOPS | nvmet-tcp IOPS |",
		"| 4 KiB randread QD1 (TCP) | 300 | 200 | 1.50 (1.50–1.50) |",
		"% with nvmet-tcp.",
		"Connect time (s): rdmablkd 0.40, nvmet-tcp 0.30.",
		"fio err rdmablkd 0, nvmet-tcp 0.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nvmet-rdma") {
		t.Errorf("NVMe/TCP report names nvmet-rdma:\n%s", out)
	}
}

// A run without a transport file (every run before perf-tcp) and one that says rdma both report
// nvmet-rdma with unlabelled rows; a transport file with anything else is an error, not a
// mislabelled table.
func TestReportTransportFile(t *testing.T) {
	for _, tr := range []string{"", "rdma"} {
		out := report(t, perfFS(tr))
		for _, want := range []string{
			"### Backing: null\n",
			"| job | rdmablkd IOPS | nvmet-rdma IOPS |",
			"| 4 KiB randread QD1 | 300 | 200 |",
			"Connect time (s): rdmablkd 0.40, nvmet-rdma 0.30.",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("transport %q: report lacks %q:\n%s", tr, want, out)
			}
		}
		if strings.Contains(out, "TCP") {
			t.Errorf("transport %q: report says TCP:\n%s", tr, out)
		}
	}
	if _, err := load(perfFS("iwarp")); err == nil || !strings.Contains(err.Error(), `transport "iwarp"`) {
		t.Errorf("load with transport iwarp: %v, want an error naming it", err)
	}
}

// The normal reports, whole: an A/B mode must not change a byte of them (these are the outputs of
// perfreport before it had one).
func TestReportNormalUnchanged(t *testing.T) {
	head := "Rounds: 1, interleaved per round (rdmablkd then nvmet in odd rounds, nvmet then rdmablkd in even ones); figures are medians (min–max) over the rounds; ratios are ours / kernel of the medians, with the per-round paired ratios' range.\n\n"
	cols := " IOPS | IOPS ours/kernel (paired range) | p50 µs ours / kernel | p99 µs ours / kernel | target CPU µs per I/O ours / kernel | IOPS per target CPU-s ours/kernel |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n"
	for tr, want := range map[string]string{
		"": head + "### Backing: null\n\n" +
			"| job | rdmablkd IOPS | nvmet-rdma" + cols +
			"| 4 KiB randread QD1 | 300 | 200 | 1.50 (1.50–1.50) | - / - | - / - | 333.3 / 166.7 | 0.50 |\n\n" +
			"Connected and idle for 10 s: target guest busy - % of one CPU with rdmablkd (rdmablkd itself - %), - % with nvmet-rdma.\n" +
			"Connect time (s): rdmablkd 0.40, nvmet-rdma 0.30. crc32c verify (round 1): fio err rdmablkd 0, nvmet-rdma 0.\n",
		"tcp": "Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener and against nvmet-tcp, the same address and port.\n" +
			head + "### Backing: null (TCP)\n\n" +
			"| job | rdmablkd (TCP) IOPS | nvmet-tcp" + cols +
			"| 4 KiB randread QD1 (TCP) | 300 | 200 | 1.50 (1.50–1.50) | - / - | - / - | 333.3 / 166.7 | 0.50 |\n\n" +
			"Connected and idle for 10 s: target guest busy - % of one CPU with rdmablkd (rdmablkd itself - %), - % with nvmet-tcp.\n" +
			"Connect time (s): rdmablkd 0.40, nvmet-tcp 0.30. crc32c verify (round 1): fio err rdmablkd 0, nvmet-tcp 0.\n",
	} {
		if got := report(t, perfFS(tr)); got != want {
			t.Errorf("transport %q: report\n%s\nwant\n%s", tr, got, want)
		}
	}
}

// abFS is perfFS(tr) as an A/B run (run.sh BASELINE=7adfa84): a versus file, the p50 latencies,
// idle CPU with rdmablkd's own share on both sides, and a fio error on the baseline side.
func abFS(tr string) fstest.MapFS {
	fsys := perfFS(tr)
	fsys["versus"] = &fstest.MapFile{Data: []byte("new commit `505683f` (work tree with local changes)\nbase commit `7adfa84`\n")}
	fsys["job.1.idle.r1.cpu"] = &fstest.MapFile{Data: []byte("50 10\n")}
	fsys["job.2.idle.r1.cpu"] = &fstest.MapFile{Data: []byte("40 20\n")}
	fsys["results.txt"].Data = append(fsys["results.txt"].Data,
		"\nperf.ours.null.rr1.r1.p50_us 90\nperf.kernel.null.rr1.r1.p50_us 80\nperf.kernel.null.rr32.r1.err 7\n"...)
	return fsys
}

// An A/B run of two rdmablkd builds (run.sh BASELINE=REV, the file "versus") names the sides new
// and base with their commits, divides new by base, gives the baseline its own rdmablkd CPU
// share, and never names nvmet or the ours/kernel of the normal report; over TCP it still says
// TCP.
func TestReportAB(t *testing.T) {
	for _, tr := range []string{"rdma", "tcp"} {
		tl := ""
		if tr == "tcp" {
			tl = " (TCP)"
		}
		out := report(t, abFS(tr))
		wants := []string{
			"A/B of two rdmablkd builds, no kernel target: new = rdmablkd built from commit `505683f` (work tree with local changes); base = rdmablkd built from commit `7adfa84`; the same configuration, address and port.\n",
			"interleaved per round (new then base in odd rounds, base then new in even ones)",
			"ratios are new / base of the medians",
			"### Backing: null" + tl + "\n",
			"| job | new (505683f) IOPS | base (7adfa84) IOPS | IOPS new/base (paired range) | p50 µs new / base | p99 µs new / base | target CPU µs per I/O new / base | IOPS per target CPU-s new/base |\n",
			"| 4 KiB randread QD1" + tl + " | 300 | 200 | 1.50 (1.50–1.50) | 90 / 80 | - / - | 333.3 / 166.7 | 0.50 |\n",
			"Connected and idle for 10 s: target guest busy 5.0 % of one CPU with new (rdmablkd itself 1.0 %), 4.0 % with base (rdmablkd itself 2.0 %).\n",
			"Connect time (s): new 0.40, base 0.30. crc32c verify (round 1): fio err new 0, base 0.\n",
			"fio errors: base rr32 r1 err=7.\n",
		}
		if tr == "tcp" {
			wants = append(wants, "Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener of either build, the same address and port.\n")
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Errorf("%s: A/B report lacks %q:\n%s", tr, want, out)
			}
		}
		for _, bad := range []string{"nvmet", "ours", "kernel /", "kernel rr"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: A/B report says %q:\n%s", tr, bad, out)
			}
		}
	}
}

// A versus file that does not name both builds once is an error naming the file, not a report
// with a side mislabelled; a label without a commit still gives the side's name as its heading.
func TestReportVersusFile(t *testing.T) {
	for _, v := range []string{"", "new commit `a1b2c3d`\n", "base commit `a1b2c3d`\nbase commit `a1b2c3d`\nnew x\n",
		"new x\nbase\n", "old commit `a1b2c3d`\nbase x\n"} {
		fsys := perfFS("")
		fsys["versus"] = &fstest.MapFile{Data: []byte(v)}
		if _, err := load(fsys); err == nil || !strings.HasPrefix(err.Error(), "versus: ") {
			t.Errorf("versus %q: load error %v, want one naming the versus file", v, err)
		}
	}
	fsys := perfFS("")
	fsys["versus"] = &fstest.MapFile{Data: []byte("new a source tree that is not a git checkout (/src)\nbase commit 7adfa84\n")}
	if out := report(t, fsys); !strings.Contains(out, "| job | new IOPS | base (7adfa84) IOPS |") {
		t.Errorf("report lacks the plain new heading:\n%s", out)
	}
}
