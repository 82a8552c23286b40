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

// sides is how a report names the run's two targets, impl "ours" (A) and impl "kernel" (B).
type sides struct {
	a, b       string // in sentences: "rdmablkd" and the kernel target, or "new" and "base"
	colA, colB string // in the table's IOPS headings
	ra, rb     string // in the ratio headings: "ours" and "kernel", or "new" and "base"
	order      string // the interleaving, for the Rounds line
}

func (r *run) sides() sides {
	if v := r.versus; v != nil {
		return sides{a: "new", b: "base", colA: column("new", v.newBuild), colB: column("base", v.baseBuild),
			ra: "new", rb: "base", order: "new then base in odd rounds, base then new in even ones"}
	}
	kt := r.kernelTarget()
	return sides{a: "rdmablkd", b: kt, colA: "rdmablkd" + r.tcpLabel(), colB: kt, ra: "ours", rb: "kernel",
		order: "rdmablkd then nvmet in odd rounds, nvmet then rdmablkd in even ones"}
}

// name is what the report calls impl ("ours" or "kernel", as in the scenario's files).
func (sd sides) name(impl string) string {
	switch impl {
	case "ours":
		return sd.ra
	case "kernel":
		return sd.rb
	}
	return impl
}

func write(w io.Writer, r *run) {
	sd, tl := r.sides(), r.tcpLabel()
	if v := r.versus; v != nil {
		if r.transport == "tcp" {
			fmt.Fprintln(w, "Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener of either build, the same address and port.")
		}
		fmt.Fprintf(w, "A/B of two rdmablkd builds, no kernel target: new = rdmablkd built from %s; base = rdmablkd built from %s; the same configuration, address and port.\n", v.newBuild, v.baseBuild)
	} else if r.transport == "tcp" {
		fmt.Fprintf(w, "Transport: NVMe/TCP. The kernel nvme-tcp host against rdmablkd's `transport: tcp` listener and against %s, the same address and port.\n", sd.b)
	}
	fmt.Fprintf(w, "Rounds: %d, interleaved per round (%s); figures are medians (min–max) over the rounds; ratios are %s / %s of the medians, with the per-round paired ratios' range.\n", r.rounds, sd.order, sd.ra, sd.rb)
	for _, b := range r.backings {
		fmt.Fprintf(w, "\n### Backing: %s%s\n\n", b, tl)
		fmt.Fprintf(w, "| job | %s IOPS | %s IOPS | IOPS %[3]s/%[4]s (paired range) | p50 µs %[3]s / %[4]s | p99 µs %[3]s / %[4]s | target CPU µs per I/O %[3]s / %[4]s | IOPS per target CPU-s %[3]s/%[4]s |\n",
			sd.colA, sd.colB, sd.ra, sd.rb)
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
		if r.versus != nil { // both sides are an rdmablkd: each has its own process CPU
			fmt.Fprintf(w, "\nConnected and idle for %.0f s: target guest busy %s %% of one CPU with %s (rdmablkd itself %s %%), %s %% with %s (rdmablkd itself %s %%).\n",
				idleWall, idle("ours", false), sd.a, idle("ours", true), idle("kernel", false), sd.b, idle("kernel", true))
		} else {
			fmt.Fprintf(w, "\nConnected and idle for %.0f s: target guest busy %s %% of one CPU with rdmablkd (rdmablkd itself %s %%), %s %% with %s.\n",
				idleWall, idle("ours", false), idle("ours", true), idle("kernel", false), sd.b)
		}
		fmt.Fprintf(w, "Connect time (s): %s %s, %s %s. crc32c verify (round 1): fio err %s %s, %s %s.\n",
			sd.a, summarize(r.connect[[2]string{"ours", b}]).format("%.2f"), sd.b, summarize(r.connect[[2]string{"kernel", b}]).format("%.2f"),
			sd.a, orDash(r.verify[[2]string{"ours", b}]), sd.b, orDash(r.verify[[2]string{"kernel", b}]))
		if errs := r.fioErrors(b, sd); len(errs) > 0 {
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

func (r *run) fioErrors(backing string, sd sides) []string {
	var out []string
	for k, s := range r.samples {
		if k.backing == backing && s.err != "" && s.err != "0" {
			out = append(out, fmt.Sprintf("%s %s r%d err=%s", sd.name(k.impl), k.job, k.round, s.err))
		}
	}
	slices.Sort(out)
	return out
}
