package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// jobs in table order, with what each one is.
var jobs = []struct{ name, what string }{
	{"rr1", "4 KiB randread QD1"},
	{"rr32", "4 KiB randread QD32 ×2 jobs"},
	{"rw1", "4 KiB randwrite QD1"},
	{"rw32", "4 KiB randwrite QD32 ×2 jobs"},
	{"sr128", "128 KiB seqread QD8"},
}

// stat is the median with min and max of a set of figures.
type stat struct {
	med, min, max float64
	n             int
}

func summarize(xs []float64) stat {
	if len(xs) == 0 {
		return stat{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{med: m, min: s[0], max: s[len(s)-1], n: len(s)}
}

func (s stat) String() string { return s.format("%.0f") }

func (s stat) format(f string) string {
	if s.n == 0 {
		return "-"
	}
	if s.n == 1 {
		return fmt.Sprintf(f, s.med)
	}
	return fmt.Sprintf(f+" ("+f+"–"+f+")", s.med, s.min, s.max)
}

// series collects one figure of one impl, backing and job over the rounds.
func (r *run) series(impl, backing, job string, get func(*sample) (float64, bool)) []float64 {
	var xs []float64
	for round := 1; round <= r.rounds; round++ {
		if s := r.samples[key{impl, backing, job, round}]; s != nil {
			if v, ok := get(s); ok {
				xs = append(xs, v)
			}
		}
	}
	return xs
}

// paired gives, per round where both targets have a figure, ours/kernel.
func (r *run) paired(backing, job string, get func(*sample) (float64, bool)) []float64 {
	var xs []float64
	for round := 1; round <= r.rounds; round++ {
		o, k := r.samples[key{"ours", backing, job, round}], r.samples[key{"kernel", backing, job, round}]
		if o == nil || k == nil {
			continue
		}
		a, ok1 := get(o)
		b, ok2 := get(k)
		if ok1 && ok2 && b > 0 {
			xs = append(xs, a/b)
		}
	}
	return xs
}

func iops(s *sample) (float64, bool) { return s.iops, s.iops > 0 }
func p50(s *sample) (float64, bool)  { return s.p50, !math.IsNaN(s.p50) }
func p99(s *sample) (float64, bool)  { return s.p99, !math.IsNaN(s.p99) }

// cpuPerIO is the target guest's busy CPU time per I/O, in microseconds.
func (r *run) cpuPerIO(s *sample) (float64, bool) {
	if !s.hasCPU || !(s.ios > 0) {
		return 0, false
	}
	return s.busyJ / r.hz * 1e6 / s.ios, true
}

// iopsPerCPU is I/Os per target CPU-second (the inverse of cpuPerIO).
func (r *run) iopsPerCPU(s *sample) (float64, bool) {
	v, ok := r.cpuPerIO(s)
	if !ok || v <= 0 {
		return 0, false
	}
	return 1e6 / v, true
}

func ratio(a, b stat) string {
	if a.n == 0 || b.n == 0 || b.med == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a.med/b.med)
}

// idleWall is how long the host VM stays connected and idle (scenario-perf-init.sh).
const idleWall = 10.0

// kernelTarget is the kernel target the run compared rdmablkd with.
func (r *run) kernelTarget() string { return "nvmet-" + r.transport }

// tcpLabel is what marks a heading or row as NVMe/TCP ("" over RDMA).
func (r *run) tcpLabel() string {
	if r.transport == "tcp" {
		return " (TCP)"
	}
	return ""
}

func write(w io.Writer, r *run) {
	kt, tl := r.kernelTarget(), r.tcpLabel()
	if r.transport == "tcp" {
		fmt.Fprintf(w, "Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener and against %s, the same address and port.\n", kt)
	}
	fmt.Fprintf(w, "Rounds: %d, interleaved per round (rdmablkd then nvmet in odd rounds, nvmet then rdmablkd in even ones); figures are medians (min–max) over the rounds; ratios are ours / kernel of the medians, with the per-round paired ratios' range.\n", r.rounds)
	for _, b := range r.backings {
		fmt.Fprintf(w, "\n### Backing: %s%s\n\n", b, tl)
		fmt.Fprintf(w, "| job | rdmablkd%s IOPS | %s IOPS | IOPS ours/kernel (paired range) | p50 µs ours / kernel | p99 µs ours / kernel | target CPU µs per I/O ours / kernel | IOPS per target CPU-s ours/kernel |\n", tl, kt)
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, j := range jobs {
			oi, ki := summarize(r.series("ours", b, j.name, iops)), summarize(r.series("kernel", b, j.name, iops))
			if oi.n == 0 && ki.n == 0 {
				continue
			}
			pr := summarize(r.paired(b, j.name, iops))
			oc, kc := summarize(r.series("ours", b, j.name, r.cpuPerIO)), summarize(r.series("kernel", b, j.name, r.cpuPerIO))
			oe, ke := summarize(r.series("ours", b, j.name, r.iopsPerCPU)), summarize(r.series("kernel", b, j.name, r.iopsPerCPU))
			fmt.Fprintf(w, "| %s%s | %s | %s | %s (%s) | %s / %s | %s / %s | %s / %s | %s |\n", j.what, tl, oi, ki,
				ratio(oi, ki), rangeOf(pr),
				summarize(r.series("ours", b, j.name, p50)), summarize(r.series("kernel", b, j.name, p50)),
				summarize(r.series("ours", b, j.name, p99)), summarize(r.series("kernel", b, j.name, p99)),
				oc.format("%.1f"), kc.format("%.1f"), ratio(oe, ke))
		}
		idle := func(impl string, daemon bool) string {
			return summarize(r.series(impl, b, "idle", func(s *sample) (float64, bool) {
				j := s.busyJ
				if daemon {
					j = s.daemonJ
				}
				return j / r.hz / idleWall * 100, s.hasCPU
			})).format("%.1f")
		}
		fmt.Fprintf(w, "\nConnected and idle for %.0f s: target guest busy %s %% of one CPU with rdmablkd (rdmablkd itself %s %%), %s %% with %s.\n",
			idleWall, idle("ours", false), idle("ours", true), idle("kernel", false), kt)
		fmt.Fprintf(w, "Connect time (s): rdmablkd %s, %s %s. crc32c verify (round 1): fio err rdmablkd %s, %s %s.\n",
			summarize(r.connect[[2]string{"ours", b}]).format("%.2f"), kt, summarize(r.connect[[2]string{"kernel", b}]).format("%.2f"),
			orDash(r.verify[[2]string{"ours", b}]), kt, orDash(r.verify[[2]string{"kernel", b}]))
		if errs := r.fioErrors(b); len(errs) > 0 {
			fmt.Fprintf(w, "fio errors: %s.\n", strings.Join(errs, ", "))
		}
	}
}

func rangeOf(s stat) string {
	if s.n == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f–%.2f", s.min, s.max)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *run) fioErrors(backing string) []string {
	var out []string
	for k, s := range r.samples {
		if k.backing == backing && s.err != "" && s.err != "0" {
			out = append(out, fmt.Sprintf("%s %s r%d err=%s", k.impl, k.job, k.round, s.err))
		}
	}
	slices.Sort(out)
	return out
}
