package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// report collects every figure of one harness run.
type report struct {
	opts                  *options
	start, end            time.Time
	host                  string
	loadBefore, loadAfter string
	io                    []ioResult
	cluster               []clusterResult
	repl                  []replResult
	replProf              *replProfile // -repl-profile
	replDir               string       // the replicated rows' volume files: where, and why there
	replLeg               string       // how the owner reaches the copy (-repl-transport)
	mem                   memResult
	goRes                 map[string][]benchSample
}

// ioResult is one job's runs, fio and ours, one entry per repeat.
type ioResult struct {
	job       ioJob
	fio, ours []ioRun
	tcp       []ioRun // ours over NVMe/TCP (tcp.go); empty for jobs without a TCP row
}

// Goals of issue 6.
const (
	goalFio     = 0.9
	goalTCP     = 0.8
	goalNsPerIO = 500
)

// stat is the median and spread of samples.
type stat struct {
	med, lo, hi float64
	n           int // samples; 0: no data
}

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return stat{m, s[0], s[len(s)-1], len(s)}
}

// f formats a stat as "median (lo–hi)" with the given verb.
func (s stat) f(verb string) string {
	if s.n == 0 {
		return "n/a"
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.med, s.lo, s.hi)
}

func pick(runs []ioRun, f func(ioRun) float64) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = f(r)
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func (r *report) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o := r.opts
	p("# rdmablk performance harness — %s\n\n", r.start.Format("2006-01-02 15:04 UTC"))
	p("- Host: %s\n", r.host)
	p("- Load average (1/5/15 min): before %s, after %s (the machine is shared; figures are taken side by side)\n", r.loadBefore, r.loadAfter)
	p("- Repeats: %d, median (min–max); run time %s per I/O run; data file %d MiB; Go -benchtime %s\n",
		o.repeats, o.runtime, o.size>>20, o.benchDur)
	p("- Duration: %s; command: `%s`\n\n", r.end.Sub(r.start).Round(time.Second), strings.Join(append([]string{"go run ./test/bench"}, os.Args[1:]...), " "))

	if len(r.io) > 0 {
		p("## (a) fio (io_uring, O_DIRECT) on the file vs `rdmablk bench` through rdmablkd (soft provider, loopback)\n\n")
		p("| job | fio IOPS | ours IOPS | ours / fio | goal ≥ %.1f |\n|---|---|---|---|---|\n", goalFio)
		for _, x := range r.io {
			fi := statOf(pick(x.fio, func(v ioRun) float64 { return v.iops }))
			ou := statOf(pick(x.ours, func(v ioRun) float64 { return v.iops }))
			ratios := make([]float64, len(x.fio))
			for i := range x.fio {
				ratios[i] = x.ours[i].iops / x.fio[i].iops
			}
			rs := statOf(ratios)
			p("| %s | %s | %s | %s | %s |\n", x.job.name, fi.f("%.0f"), ou.f("%.0f"), rs.f("%.2f"), verdict(rs.med >= goalFio))
		}
		p("\nRatios are per repeat (fio and ours ran back to back), then the median.\n\n")
		r.tcpMarkdown(p)

		p("## (d) CPU seconds per GB moved\n\n")
		p("| job | target (rdmablkd) | initiator (rdmablk bench) | target + initiator | fio |\n|---|---|---|---|---|\n")
		for _, x := range r.io {
			perGB := func(runs []ioRun, f func(ioRun) float64) stat {
				return statOf(pick(runs, func(v ioRun) float64 { return f(v) / (v.bytes / 1e9) }))
			}
			t := perGB(x.ours, func(v ioRun) float64 { return v.cpuTgt })
			in := perGB(x.ours, func(v ioRun) float64 { return v.cpuInit })
			both := perGB(x.ours, func(v ioRun) float64 { return v.cpuTgt + v.cpuInit })
			fi := perGB(x.fio, func(v ioRun) float64 { return v.cpuInit })
			p("| %s | %s | %s | %s | %s |\n", x.job.name, t.f("%.2f"), in.f("%.2f"), both.f("%.2f"), fi.f("%.2f"))
		}
		p("\nTarget: utime+stime of rdmablkd (/proc/<pid>/stat) over the run; initiator and fio: rusage of the process. GB = 10⁹ bytes.\n\n")

		p("## Memory (rdmablkd)\n\n")
		qp := make([]float64, len(r.mem.perQP))
		for i, v := range r.mem.perQP {
			qp[i] = float64(v) / 1024
		}
		p("| figure | KiB |\n|---|---|\n")
		p("| RSS idle (started, no connection) | %d |\n", r.mem.idle>>10)
		p("| RSS added per connected I/O QP, depth %d, excluding the buffer pool | %s |\n", memDepth, statOf(qp).f("%.0f"))
		pool := memDepth*(128<<10) + memDepth*(4096+4096) + 2*memDepth*16
		p("| registered memory per I/O QP at depth %d (MDTS 128 KiB data buffers + page-aligned 4 KiB in-capsule receive buffers + CQEs; virtual, resident only when touched) | %d |\n\n", memDepth, pool>>10)
		p("Per QP: per repeat, RSS growth while connecting %d more controllers with %d I/O queues each (earlier ones stay connected), divided by %d (their admin queues included); no I/O ran on them. The idle QP's resident memory is its Go structures, the touched receive buffers and the soft provider's per-connection state.\n\n", memCtrls, memQueues, memCtrls*memQueues)
	}

	if len(r.cluster) > 0 {
		p("## (e) Cluster volume vs static volume (same file, same rdmablkd, `rdmablk bench` over the soft provider)\n\n")
		p("| job | static IOPS | cluster IOPS | cluster / static | goal ≥ %.2f |\n|---|---|---|---|---|\n", goalCluster)
		for _, x := range r.cluster {
			st := statOf(pick(x.static, func(v ioRun) float64 { return v.iops }))
			cl := statOf(pick(x.cluster, func(v ioRun) float64 { return v.iops }))
			ratios := make([]float64, len(x.static))
			for i := range x.static {
				ratios[i] = x.cluster[i].iops / x.static[i].iops
			}
			rs := statOf(ratios)
			p("| %s | %s | %s | %s | %s |\n", x.job.name, st.f("%.0f"), cl.f("%.0f"), rs.f("%.2f"), verdict(rs.med >= goalCluster))
		}
		p("\nOne single-node cluster daemon serves the file twice: as a static volume from its config and as a cluster volume created through the control API (reconciler, metering, resize handle). The two run back to back within each repeat, the first of the pair alternating (A B, B A, …); ratios are per repeat, then the median.\n\n")
	}

	r.replMarkdown(p)

	if r.goRes != nil {
		p("## (b) 128 KiB sequential transfer: soft provider vs raw TCP (loopback)\n\n")
		soft := r.goRes[softVsTCP[0].pkg+" "+softVsTCP[0].name]
		tcp := r.goRes[softVsTCP[1].pkg+" "+softVsTCP[1].name]
		p("| path | MB/s |\n|---|---|\n")
		p("| %s | %s |\n", softVsTCP[0].label, statOf(mbps(soft)).f("%.0f"))
		p("| %s | %s |\n", softVsTCP[1].label, statOf(mbps(tcp)).f("%.0f"))
		n := min(len(soft), len(tcp))
		ratios := make([]float64, n)
		for i := range n {
			ratios[i] = soft[i].mbps / tcp[i].mbps
		}
		rs := statOf(ratios)
		p("\nsoft / raw TCP: **%s** (goal ≥ %.1f: %s)\n\n", rs.f("%.2f"), goalTCP, verdict(rs.med >= goalTCP))

		p("## (c) Go micro-benchmarks (per I/O or per work request)\n\n")
		p("| benchmark | what | ns/op | allocs/op |\n|---|---|---|---|\n")
		for _, mb := range microBenches {
			s := r.goRes[mb.pkg+" "+mb.name]
			ns := make([]float64, len(s))
			al := make([]float64, len(s))
			for i, v := range s {
				ns[i], al[i] = v.nsPerOp, v.allocs
			}
			p("| `%s` %s | %s | %s | %s |\n", mb.pkg, mb.name, mb.label, statOf(ns).f("%.0f"), statOf(al).f("%.0f"))
		}
		core := r.goRes[microBenches[0].pkg+" "+microBenches[0].name]
		var ns, al []float64
		for _, v := range core {
			ns, al = append(ns, v.nsPerOp), append(al, v.allocs)
		}
		cs, ca := statOf(ns), statOf(al)
		p("\nTarget steady state (core, null backend, 4 KiB read): %.0f ns/op, %.0f allocs/op — goal ≤ %d ns and 0 allocs: %s.\n",
			cs.med, ca.med, goalNsPerIO, verdict(cs.med <= goalNsPerIO && ca.hi == 0))
		p("The transport's own share allocates nothing (target/rdma TestIOPathAllocatesNothing); allocs/op of the in-process end-to-end rows include the soft provider and the test host.\n")
	}
	return b.String()
}

func mbps(s []benchSample) []float64 {
	out := make([]float64, len(s))
	for i, v := range s {
		out[i] = v.mbps
	}
	return out
}
