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
