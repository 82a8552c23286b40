package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The frontends scenario (test/lab/run.sh frontends, guest/scenario-frontends-init.sh): one
// rdmablkd volume through three block device paths in the initiator guest — the kernel nvme-rdma
// host, our initiator behind ublk, our initiator behind NBD — interleaved over rounds.

// feConfigs in table order, with the device they give and the goal against the kernel host
// (issue 13: ublk ≥ 0.9×, nbd ≥ 0.7× of the kernel host's IOPS; 0 = the reference).
// Experiment rows (lab.configs=…: -np the attachment with GODEBUG=asyncpreemptoff=1, -b under
// chrt --batch, -n with --sched normal) appear only when the run had them.
var feConfigs = []feConfig{
	{"kernel", "kernel nvme-rdma host (/dev/nvmeXnY)", 0, false},
	{"ublk", "rdmablk --frontend ublk (/dev/ublkbN)", 0.9, false},
	{"nbd", "rdmablk --frontend nbd (/dev/nbdN)", 0.7, false},
	{"ublk-np", "rdmablk --frontend ublk, GODEBUG=asyncpreemptoff=1 (experiment)", 0.9, true},
	{"nbd-np", "rdmablk --frontend nbd, GODEBUG=asyncpreemptoff=1 (experiment)", 0.7, true},
	{"ublk-b", "rdmablk --frontend ublk under chrt --batch (experiment)", 0.9, true},
	{"nbd-b", "rdmablk --frontend nbd under chrt --batch (experiment)", 0.7, true},
	{"ublk-n", "rdmablk --frontend ublk --sched normal (experiment)", 0.9, true},
	{"nbd-n", "rdmablk --frontend nbd --sched normal (experiment)", 0.7, true},
}

// feConfig is one block device path of the frontends comparison.
type feConfig struct {
	name, what string
	goal       float64
	experiment bool
}

// feJob is one timed fio job.
type feJob struct{ name, what string }

// feJobs are the timed fio jobs, in table order.
var feJobs = []feJob{
	{"rr32", "4 KiB randread QD32 ×2 jobs"},
	{"rw32", "4 KiB randwrite QD32 ×2 jobs"},
}

type feKey struct {
	cfg, job string
	round    int
}

// feSample is one fio job of one configuration in one round; NaN where nothing was reported.
type feSample struct {
	fioFigures
	busyJ, procJ, wallS float64 // initiator guest busy jiffies, attachment process jiffies, job wall s
	ctxt                float64 // initiator guest context switches (all CPUs) over the job
	tbusyJ, tprocJ      float64 // target guest busy jiffies and rdmablkd's over the job
	// rxe: the initiator guest's RDMA port counters that moved over the job
	// (name → delta; nil when the run reported none).
	rxe map[string]float64
}

// feRun is everything one frontends run reported.
type feRun struct {
	hz        float64
	kernel    string
	configs   []string // the configurations the guest ran (ublk is missing without ublk_drv)
	skipped   string   // the kernel without ublk_drv, when ublk was skipped
	rounds    int
	orders    map[int]string
	samples   map[feKey]*feSample
	verify    map[string]*feSample
	connect   map[string][]float64
	devices   map[string][]string
	provider  map[string]string
	queues    map[string]string // I/O queues x depth
	leftovers []string
}

func newFeSample() *feSample {
	nan := math.NaN()
	return &feSample{fioFigures: newFioFigures(), busyJ: nan, procJ: nan, wallS: nan, ctxt: nan, tbusyJ: nan, tprocJ: nan}
}

// loadFrontends reads results.txt of a frontends run: "KEY VALUE" lines with keys starting "fe.".
func loadFrontends(fsys fs.FS) (*feRun, error) {
	res, err := fs.ReadFile(fsys, "results.txt")
	if err != nil {
		return nil, fmt.Errorf("no results.txt: %w", err)
	}
	r := &feRun{hz: 100, orders: map[int]string{}, samples: map[feKey]*feSample{}, verify: map[string]*feSample{},
		connect: map[string][]float64{}, devices: map[string][]string{}, provider: map[string]string{}, queues: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(string(res)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[0], "fe.") {
			continue
		}
		r.add(f[0], f[1])
	}
	return r, nil
}

func (r *feRun) add(name, v string) {
	if when, ok := strings.CutPrefix(name, "fe.leftover."); ok {
		r.leftovers = append(r.leftovers, when+": "+v)
		return
	}
	k := strings.Split(name, ".")
	switch {
	case len(k) == 2 && k[1] == "kernel":
		r.kernel = v
	case len(k) == 2 && k[1] == "hz":
		if x, err := strconv.ParseFloat(v, 64); err == nil && x > 0 {
			r.hz = x
		}
	case len(k) == 2 && k[1] == "configs":
		r.configs = strings.Split(v, ",")
	case len(k) == 3 && k[1] == "ublk" && k[2] == "skipped":
		r.skipped = v
	case len(k) == 3 && k[1] == "order":
		if n, ok := roundOf(k[2]); ok {
			r.orders[n] = strings.ReplaceAll(v, ",", " ")
			r.rounds = max(r.rounds, n)
		}
	case len(k) == 3 && k[2] == "provider":
		r.provider[k[1]] = v
	case len(k) == 3 && k[2] == "queues":
		r.queues[k[1]] = v
	case len(k) == 4 && k[2] == "connect_s":
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			r.connect[k[1]] = append(r.connect[k[1]], x)
		}
	case len(k) == 4 && k[2] == "device":
		if !slices.Contains(r.devices[k[1]], v) {
			r.devices[k[1]] = append(r.devices[k[1]], v)
		}
	case len(k) == 4 && k[2] == "verify":
		s := r.verify[k[1]]
		if s == nil {
			s = newFeSample()
			r.verify[k[1]] = s
		}
		s.set(k[3], v)
	case len(k) == 5: // fe.CFG.JOB.rROUND.FIELD
		n, ok := roundOf(k[3])
		if !ok {
			return
		}
		key := feKey{k[1], k[2], n}
		s := r.samples[key]
		if s == nil {
			s = newFeSample()
			r.samples[key] = s
		}
		s.set(k[4], v)
		r.rounds = max(r.rounds, n)
	}
}

func roundOf(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(s, "r"))
	return n, err == nil && strings.HasPrefix(s, "r") && n > 0
}

func (s *feSample) set(field, v string) {
	if s.fioFigures.set(field, v) {
		return
	}
	if field == "rxe" {
		s.rxe = parseCounters(v)
		return
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return
	}
	switch field {
	case "busy_j":
		s.busyJ = x
	case "proc_j":
		s.procJ = x
	case "wall_s":
		s.wallS = x
	case "ctxt":
		s.ctxt = x
	case "tbusy_j":
		s.tbusyJ = x
	case "tproc_j":
		s.tprocJ = x
	}
}

func (r *feRun) series(cfg, job string, get func(*feSample) (float64, bool)) []float64 {
	var xs []float64
	for n := 1; n <= r.rounds; n++ {
		if s := r.samples[feKey{cfg, job, n}]; s != nil {
			if v, ok := get(s); ok {
				xs = append(xs, v)
			}
		}
	}
	return xs
}

// paired gives, per round where both have IOPS, cfg / kernel.
func (r *feRun) paired(cfg, job string) []float64 {
	var xs []float64
	for n := 1; n <= r.rounds; n++ {
		a, b := r.samples[feKey{cfg, job, n}], r.samples[feKey{"kernel", job, n}]
		if a != nil && b != nil && a.iops > 0 && b.iops > 0 {
			xs = append(xs, a.iops/b.iops)
		}
	}
	return xs
}

func feIOPS(s *feSample) (float64, bool) { return s.iops, s.iops > 0 }
func feP50(s *feSample) (float64, bool)  { return s.p50, !math.IsNaN(s.p50) }
func feP99(s *feSample) (float64, bool)  { return s.p99, !math.IsNaN(s.p99) }

// cpuPerIO is the initiator guest's busy CPU time per I/O fio completed, in µs.
func (r *feRun) cpuPerIO(s *feSample) (float64, bool) { return r.perIO(s.busyJ, s) }

// ctxtPerIO is the initiator guest's context switches per I/O fio completed.
func (r *feRun) ctxtPerIO(s *feSample) (float64, bool) {
	if math.IsNaN(s.ctxt) || !(s.ios > 0) {
		return 0, false
	}
	return s.ctxt / s.ios, true
}

// procPerIO is the attachment process's (rdmablk connect) CPU time per I/O, in µs.
func (r *feRun) procPerIO(s *feSample) (float64, bool) { return r.perIO(s.procJ, s) }

// targetPerIO is the target guest's busy CPU time per I/O, in µs; targetProcPerIO rdmablkd's.
func (r *feRun) targetPerIO(s *feSample) (float64, bool) { return r.perIO(s.tbusyJ, s) }

func (r *feRun) targetProcPerIO(s *feSample) (float64, bool) { return r.perIO(s.tprocJ, s) }

func (r *feRun) perIO(jiffies float64, s *feSample) (float64, bool) {
	if math.IsNaN(jiffies) || !(s.ios > 0) {
		return 0, false
	}
	return jiffies / r.hz * 1e6 / s.ios, true
}

// targetBusyPct is the target guest's busy share of its CPU over the job's wall time.
func (r *feRun) targetBusyPct(s *feSample) (float64, bool) {
	if math.IsNaN(s.tbusyJ) || !(s.wallS > 0) {
		return 0, false
	}
	return s.tbusyJ / r.hz / s.wallS * 100, true
}

// busyPct is the initiator guest's busy share of one CPU over the job's wall time.
func (r *feRun) busyPct(s *feSample) (float64, bool) {
	if math.IsNaN(s.busyJ) || !(s.wallS > 0) {
		return 0, false
	}
	return s.busyJ / r.hz / s.wallS * 100, true
}

// parseCounters reads "name:delta,name:delta" (an empty value: none moved).
func parseCounters(v string) map[string]float64 {
	m := map[string]float64{}
	for _, kv := range strings.Split(v, ",") {
		name, d, ok := strings.Cut(kv, ":")
		if !ok {
			continue
		}
		if x, err := strconv.ParseFloat(d, 64); err == nil {
			m[name] = x
		}
	}
	return m
}

// rxePerIO returns the getter of one port counter per I/O fio completed
// (0 when the counter did not move in a job that reported counters).
func rxePerIO(name string, per float64) func(*feSample) (float64, bool) {
	return func(s *feSample) (float64, bool) {
		if s.rxe == nil || !(s.ios > 0) {
			return 0, false
		}
		return s.rxe[name] / s.ios * per, true
	}
}

// rxeOthers lists the port counters other than the packet counts that
// moved in any round of cfg's job, sorted.
func (r *feRun) rxeOthers(cfg, job string) []string {
	seen := map[string]bool{}
	for n := 1; n <= r.rounds; n++ {
		if s := r.samples[feKey{cfg, job, n}]; s != nil {
			for k, v := range s.rxe {
				if v != 0 && k != "sent_pkts" && k != "rcvd_pkts" {
					seen[k] = true
				}
			}
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (r *feRun) hasRxe() bool {
	for _, s := range r.samples {
		if s.rxe != nil {
			return true
		}
	}
	return false
}

// goalVerdict says whether the ratio of the medians and the median of the
// paired (per-round) ratios both meet the goal, and whether every round
// did. The two medians differ when the rounds' speeds differ: a round
// where both ran fast weighs in the first as in no other.
func goalVerdict(med stat, paired stat, goal float64) string {
	switch {
	case med.n == 0:
		return "no figure"
	case med.med < goal || paired.n > 0 && paired.med < goal:
		return fmt.Sprintf("**not met** (< %.1f×)", goal)
	case paired.n > 0 && paired.min < goal:
		return fmt.Sprintf("met on the medians (≥ %.1f×), not in every round", goal)
	default:
		return fmt.Sprintf("met (≥ %.1f×)", goal)
	}
}

func writeFrontends(w io.Writer, r *feRun) {
	fmt.Fprintf(w, "Rounds: %d, interleaved, the order rotated per round (%s); figures are medians (min–max) over the rounds; the goals' ratios are the configuration's median IOPS / the kernel host's, and the median (min–max) of the per-round paired ratios; a goal is met when both reach it.\n",
		r.rounds, r.orderList())
	if r.skipped != "" {
		fmt.Fprintf(w, "\n**ublk skipped**: no ublk_drv in kernel %s (ublk_drv exists from Linux 6.0; run with LAB_KERNEL=6.12).\n", r.skipped)
	}
	ran := func(cfg string) bool { return len(r.configs) == 0 || slices.Contains(r.configs, cfg) }
	shown := func(i int) bool { return !feConfigs[i].experiment || len(r.configs) > 0 && ran(feConfigs[i].name) }
	// rows calls row for every job and every configuration the report
	// lists (shown and run), jobs outer: one table row each.
	rows := func(row func(feJob, feConfig)) {
		for _, j := range feJobs {
			for i, c := range feConfigs {
				if shown(i) && ran(c.name) {
					row(j, c)
				}
			}
		}
	}

	fmt.Fprintln(w, "\n### Goals (issue 13): IOPS against the kernel host on the same target")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| job | frontend | median IOPS / kernel's | paired rounds' ratio | goal |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, j := range feJobs {
		ki := summarize(r.series("kernel", j.name, feIOPS))
		for i, c := range feConfigs {
			if i == 0 || !shown(i) {
				continue
			}
			if !ran(c.name) {
				fmt.Fprintf(w, "| %s | %s | - | - | not run |\n", j.what, c.name)
				continue
			}
			ci := summarize(r.series(c.name, j.name, feIOPS))
			pr := summarize(r.paired(c.name, j.name))
			rs := stat{}
			if ci.n > 0 && ki.n > 0 && ki.med > 0 {
				rs = stat{med: ci.med / ki.med, n: 1}
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", j.what, c.name, ratio(ci, ki), pr.format("%.2f"), goalVerdict(rs, pr, c.goal))
		}
	}

	fmt.Fprintln(w, "\n### Per configuration")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| job | configuration | IOPS | p50 µs | p99 µs | initiator guest CPU µs per I/O | initiator guest busy % of its CPU | rdmablk process CPU µs per I/O | initiator guest context switches per I/O | target guest CPU µs per I/O (rdmablkd) | target guest busy % |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	rows(func(j feJob, c feConfig) {
		ci := summarize(r.series(c.name, j.name, feIOPS))
		proc := "-"
		if c.name != "kernel" {
			proc = summarize(r.series(c.name, j.name, r.procPerIO)).format("%.1f")
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s |\n", j.what, c.what, ci,
			summarize(r.series(c.name, j.name, feP50)), summarize(r.series(c.name, j.name, feP99)),
			summarize(r.series(c.name, j.name, r.cpuPerIO)).format("%.1f"),
			summarize(r.series(c.name, j.name, r.busyPct)).format("%.0f"), proc,
			summarize(r.series(c.name, j.name, r.ctxtPerIO)).format("%.2f"),
			summarize(r.series(c.name, j.name, r.targetPerIO)).format("%.1f"),
			summarize(r.series(c.name, j.name, r.targetProcPerIO)).format("%.1f"),
			summarize(r.series(c.name, j.name, r.targetBusyPct)).format("%.0f"))
	})

	if r.hasRxe() {
		fmt.Fprintln(w, "\n### RDMA traffic (the initiator guest's rxe0 port counters over each job)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "| job | configuration | packets sent per I/O | packets received per I/O | other counters that moved, per 1,000 I/O |")
		fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
		rows(func(j feJob, c feConfig) {
			var other []string
			for _, k := range r.rxeOthers(c.name, j.name) {
				other = append(other, k+" "+summarize(r.series(c.name, j.name, rxePerIO(k, 1000))).format("%.1f"))
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", j.what, c.what,
				summarize(r.series(c.name, j.name, rxePerIO("sent_pkts", 1))).format("%.2f"),
				summarize(r.series(c.name, j.name, rxePerIO("rcvd_pkts", 1))).format("%.2f"),
				orDash(strings.Join(other, "; ")))
		})
	}

	fmt.Fprintln(w)
	var vs, cs, ds []string
	for i, c := range feConfigs {
		if !shown(i) || !ran(c.name) {
			continue
		}
		v := r.verify[c.name]
		if v == nil {
			vs = append(vs, c.name+" -")
		} else {
			vs = append(vs, fmt.Sprintf("%s err=%s (%s write+verify IOPS)", c.name, orDash(v.err), summarize(nonNaN(v.iops))))
		}
		cs = append(cs, fmt.Sprintf("%s %s", c.name, summarize(r.connect[c.name]).format("%.2f")))
		d := strings.Join(r.devices[c.name], ", ")
		if q := r.queues[c.name]; q != "" {
			d += ", " + strings.Replace(q, "x", " I/O queues × ", 1)
		}
		if p := r.provider[c.name]; p != "" {
			d += ", verbs provider " + p
		}
		ds = append(ds, fmt.Sprintf("%s %s", c.name, orDash(d)))
	}
	fmt.Fprintf(w, "crc32c write+verify (round 1): %s.\n", strings.Join(vs, "; "))
	fmt.Fprintf(w, "Connect time (s, until the device has its size): %s.\n", strings.Join(cs, "; "))
	fmt.Fprintf(w, "Devices: %s.\n", strings.Join(ds, "; "))
	if len(r.leftovers) == 0 {
		fmt.Fprintln(w, "Leftovers: none (before every connect and after every disconnect no nvme namespace, ublk disk, connected nbd device or rdmablk attachment was present).")
	} else {
		slices.Sort(r.leftovers)
		fmt.Fprintf(w, "**Leftovers**: %s.\n", strings.Join(r.leftovers, "; "))
	}
	if errs := r.fioErrors(); len(errs) > 0 {
		fmt.Fprintf(w, "fio errors: %s.\n", strings.Join(errs, ", "))
	}
}

func nonNaN(x float64) []float64 {
	if math.IsNaN(x) {
		return nil
	}
	return []float64{x}
}

func (r *feRun) orderList() string {
	var o []string
	for n := 1; n <= r.rounds; n++ {
		if s, ok := r.orders[n]; ok {
			o = append(o, s)
		}
	}
	if len(o) == 0 {
		return "order not reported"
	}
	return strings.Join(o, ", ")
}

func (r *feRun) fioErrors() []string {
	var out []string
	for k, s := range r.samples {
		if s.err != "" && s.err != "0" {
			out = append(out, fmt.Sprintf("%s %s r%d err=%s", k.cfg, k.job, k.round, s.err))
		}
	}
	for c, s := range r.verify {
		if s.err != "" && s.err != "0" {
			out = append(out, fmt.Sprintf("%s verify err=%s", c, s.err))
		}
	}
	slices.Sort(out)
	return out
}
