package main

import (
	"strings"
	"testing"
	"testing/fstest"
)

func feFS(lines ...string) fstest.MapFS {
	return fstest.MapFS{"results.txt": {Data: []byte(strings.Join(lines, "\n") + "\n")}}
}

// Three rounds of kernel, ublk and nbd: medians, paired ratios, goal verdicts, CPU per I/O from
// jiffies, leftovers and errors must all come out of the results lines.
func TestFrontendsReport(t *testing.T) {
	lines := []string{
		"fe.kernel 6.12.48+deb12-amd64", "fe.hz 100", "fe.configs kernel,ublk,nbd",
		"fe.order.r1 kernel,ublk,nbd", "fe.order.r2 ublk,nbd,kernel", "fe.order.r3 nbd,kernel,ublk",
		"fe.ublk.connect_s.r1 0.80", "fe.ublk.device.r1 /dev/ublkb0", "fe.ublk.device.r2 /dev/ublkb0",
		"fe.ublk.provider ibverbs", "fe.ublk.queues 1x128", "fe.kernel.device.r1 /dev/nvme0n1",
		"fe.kernel.verify.err 0", "fe.kernel.verify.iops 900", "fe.ublk.verify.err 0", "fe.nbd.verify.err 84",
		"fe.leftover.r2.after.nbd /dev/nbd0",
		"RESULT noise", "perf.ours.brd.rr32.r1.iops 5",
	}
	// randread: kernel 1000, 1000, 1200; ublk 950, 800, 1140 (0.95, 0.80, 0.95: median ratio
	// 950/1000 = 0.95, paired median 0.95, met on the medians but not in round 2); nbd 600 every
	// round (0.6, 0.6, 0.5: not met). randwrite, kernel 500, 700, 300: ublk 560, 600, 260 (ratio of
	// medians 560/500 = 1.12, paired 1.12, 0.86, 0.87: median 0.87, not met); nbd at the kernel's
	// rate (met).
	kernel := []string{"1000", "1000", "1200"}
	ublk := []string{"950", "800", "1140"}
	kw, uw := []string{"500", "700", "300"}, []string{"560", "600", "260"}
	for i, r := range []string{"r1", "r2", "r3"} {
		lines = append(lines,
			"fe.kernel.rr32."+r+".iops "+kernel[i], "fe.kernel.rr32."+r+".ios 10000", "fe.kernel.rr32."+r+".err 0",
			"fe.ublk.rr32."+r+".iops "+ublk[i], "fe.ublk.rr32."+r+".err 0",
			"fe.nbd.rr32."+r+".iops 600", "fe.nbd.rr32."+r+".err 0",
			"fe.kernel.rw32."+r+".iops "+kw[i], "fe.ublk.rw32."+r+".iops "+uw[i], "fe.nbd.rw32."+r+".iops "+kw[i],
		)
	}
	lines = append(lines,
		// kernel r1: 100 jiffies = 1 s over 10,000 I/Os = 100 µs per I/O; 10 s wall = 10 % busy
		"fe.kernel.rr32.r1.busy_j 100", "fe.kernel.rr32.r1.wall_s 10",
		// ublk r1: p50/p99, 8000 I/Os, 400 busy jiffies = 500 µs per I/O, the process 160 = 200 µs
		"fe.ublk.rr32.r1.ios 8000", "fe.ublk.rr32.r1.busy_j 400", "fe.ublk.rr32.r1.proc_j 160",
		"fe.ublk.rr32.r1.p50_us 60000", "fe.ublk.rr32.r1.p99_us 90000",
		"fe.nbd.rr32.r3.err 5",
	)
	r, err := loadFrontends(feFS(lines...))
	if err != nil {
		t.Fatal(err)
	}
	if r.rounds != 3 || r.kernel != "6.12.48+deb12-amd64" || len(r.configs) != 3 {
		t.Fatalf("rounds %d kernel %q configs %v", r.rounds, r.kernel, r.configs)
	}
	var b strings.Builder
	writeFrontends(&b, r)
	out := b.String()
	for _, want := range []string{
		"(kernel ublk nbd, ublk nbd kernel, nbd kernel ublk)",
		"| 4 KiB randread QD32 ×2 jobs | ublk | 0.95 | 0.95 (0.80–0.95) | met on the medians (≥ 0.9×), not in every round |",
		"| 4 KiB randread QD32 ×2 jobs | nbd | 0.60 | 0.60 (0.50–0.60) | **not met** (< 0.7×) |",
		"| 4 KiB randwrite QD32 ×2 jobs | ublk | 1.12 | 0.87 (0.86–1.12) | **not met** (< 0.9×) |",
		"| 4 KiB randwrite QD32 ×2 jobs | nbd | 1.00 | 1.00 (1.00–1.00) | met (≥ 0.7×) |",
		"| 4 KiB randread QD32 ×2 jobs | kernel nvme-rdma host (/dev/nvmeXnY) | 1000 (1000–1200) | - | - | 100.0 | 10 | - |",
		"| 4 KiB randread QD32 ×2 jobs | rdmablk --frontend ublk (/dev/ublkbN) | 950 (800–1140) | 60000 | 90000 | 500.0 | - | 200.0 |",
		"crc32c write+verify (round 1): kernel err=0 (900 write+verify IOPS); ublk err=0 (- write+verify IOPS); nbd err=84 (- write+verify IOPS).",
		"Connect time (s, until the device has its size): kernel -; ublk 0.80; nbd -.",
		"Devices: kernel /dev/nvme0n1; ublk /dev/ublkb0, 1 I/O queues × 128, verbs provider ibverbs; nbd -.",
		"**Leftovers**: r2.after.nbd: /dev/nbd0.",
		"fio errors: nbd rr32 r3 err=5, nbd verify err=84.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ublk skipped") {
		t.Errorf("ublk reported skipped:\n%s", out)
	}
}

// On 6.1 the guest skips ublk: the report must say so, mark its rows not run, and still compare nbd.
func TestFrontendsReportWithoutUblk(t *testing.T) {
	r, err := loadFrontends(feFS(
		"fe.configs kernel,nbd", "fe.ublk.skipped 6.1.0-56-amd64",
		"fe.order.r1 kernel,nbd", "fe.kernel.rr32.r1.iops 1000", "fe.nbd.rr32.r1.iops 800",
	))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeFrontends(&b, r)
	out := b.String()
	for _, want := range []string{
		"**ublk skipped**: no ublk_drv in kernel 6.1.0-56-amd64",
		"| 4 KiB randread QD32 ×2 jobs | ublk | - | - | not run |",
		"| 4 KiB randread QD32 ×2 jobs | nbd | 0.80 | 0.80 | met (≥ 0.7×) |",
		"Leftovers: none",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "rdmablk --frontend ublk") {
		t.Errorf("a ublk row without a ublk run:\n%s", out)
	}
}

func TestFrontendsNoResults(t *testing.T) {
	if _, err := loadFrontends(fstest.MapFS{}); err == nil {
		t.Fatal("no error without results.txt")
	}
}

// The rxe port counters of each job become per-I/O packet counts, and the other counters that
// moved (an RNR NAK, a retry) are listed per 1,000 I/O; a run without them has no such table.
func TestFrontendsRxeCounters(t *testing.T) {
	base := []string{"fe.hz 100", "fe.configs kernel,ublk", "fe.order.r1 kernel,ublk",
		"fe.kernel.rr32.r1.iops 1000", "fe.kernel.rr32.r1.ios 10000",
		"fe.ublk.rr32.r1.iops 900", "fe.ublk.rr32.r1.ios 9000"}
	r, err := loadFrontends(feFS(base...))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	writeFrontends(&b, r)
	if strings.Contains(b.String(), "RDMA traffic") {
		t.Errorf("a run without counters has an RDMA traffic table:\n%s", b.String())
	}
	r, err = loadFrontends(feFS(append(base,
		"fe.kernel.rr32.r1.rxe sent_pkts:20000,rcvd_pkts:60000",
		"fe.ublk.rr32.r1.rxe sent_pkts:27000,rcvd_pkts:54000,rcvd_rnr_err:18,bogus,send_rnr_err:x")...))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	writeFrontends(&b, r)
	out := b.String()
	for _, want := range []string{
		"| 4 KiB randread QD32 ×2 jobs | kernel nvme-rdma host (/dev/nvmeXnY) | 2.00 | 6.00 | - |",
		"| 4 KiB randread QD32 ×2 jobs | rdmablk --frontend ublk (/dev/ublkbN) | 3.00 | 6.00 | rcvd_rnr_err 2.0 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
