package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// key names one measured configuration: a fio job (or "idle") in one round against one target.
type key struct {
	impl, backing, job string
	round              int
}

// sample is what one configuration measured. A figure that was never reported is NaN, so a
// half-finished run still reports what it has.
type sample struct {
	fioFigures
	busyJ, daemonJ float64 // target guest busy jiffies, rdmablkd's own jiffies
	hasCPU         bool
}

// fioFigures are one fio job's RESULT fields; NaN until reported.
type fioFigures struct {
	iops, ios, p50, p99 float64
	err                 string
}

func newFioFigures() fioFigures {
	nan := math.NaN()
	return fioFigures{iops: nan, ios: nan, p50: nan, p99: nan}
}

// set records RESULT field (iops, ios, p50_us, p99_us, err) with value v.
// It reports false for a field it does not know; an unparsable number is
// ignored (the figure stays NaN).
func (f *fioFigures) set(field, v string) bool {
	if field == "err" {
		f.err = v
		return true
	}
	var dst *float64
	switch field {
	case "iops":
		dst = &f.iops
	case "ios":
		dst = &f.ios
	case "p50_us":
		dst = &f.p50
	case "p99_us":
		dst = &f.p99
	default:
		return false
	}
	if x, err := strconv.ParseFloat(v, 64); err == nil {
		*dst = x
	}
	return true
}

// run is everything one perf run produced.
type run struct {
	hz       float64
	samples  map[key]*sample
	verify   map[[2]string]string    // impl, backing → fio err of the crc32c verify job
	connect  map[[2]string][]float64 // impl, backing → connect seconds per round
	rounds   int
	backings []string
	// transport is "rdma" or "tcp": the perf scenario's file "transport"
	// (absent in runs before the NVMe/TCP variant: rdma).
	transport string
	// versus is set for an A/B run of two rdmablkd builds (the file "versus"): impl "ours" is
	// the new build, impl "kernel" the baseline build, and no kernel target took part.
	versus *versus
}

func (r *run) at(k key) *sample {
	s := r.samples[k]
	if s == nil {
		s = &sample{fioFigures: newFioFigures()}
		r.samples[k] = s
	}
	return s
}

func load(fsys fs.FS) (*run, error) {
	r := &run{hz: 100, samples: map[key]*sample{}, verify: map[[2]string]string{}, connect: map[[2]string][]float64{},
		transport: "rdma"}
	if b, err := fs.ReadFile(fsys, "transport"); err == nil {
		switch t := strings.TrimSpace(string(b)); t {
		case "rdma", "tcp":
			r.transport = t
		default:
			return nil, fmt.Errorf("transport %q: want rdma or tcp", t)
		}
	}
	if b, err := fs.ReadFile(fsys, "versus"); err == nil {
		v, err := parseVersus(b)
		if err != nil {
			return nil, err
		}
		r.versus = v
	}
	if b, err := fs.ReadFile(fsys, "target.hz"); err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && v > 0 {
			r.hz = v
		}
	}
	res, err := fs.ReadFile(fsys, "results.txt")
	if err != nil {
		return nil, fmt.Errorf("no results.txt: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(res)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || !strings.HasPrefix(f[0], "perf.") {
			continue
		}
		r.addResult(strings.Split(f[0], "."), f[1])
	}
	serves, _ := fs.Glob(fsys, "serve.*")
	targets := map[string][3]string{} // N → round, backing, impl
	for _, p := range serves {
		n := strings.TrimPrefix(path.Base(p), "serve.")
		if strings.Contains(n, ".") {
			continue // serve.N.done
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			continue
		}
		if f := strings.Fields(string(b)); len(f) == 3 {
			targets[n] = [3]string{f[0], f[1], f[2]}
		}
	}
	cpus, _ := fs.Glob(fsys, "job.*.cpu")
	for _, p := range cpus {
		// job.N.JOB.rROUND.cpu
		parts := strings.Split(strings.TrimSuffix(path.Base(p), ".cpu"), ".")
		if len(parts) != 4 {
			continue
		}
		t, ok := targets[parts[1]]
		round, err := strconv.Atoi(strings.TrimPrefix(parts[3], "r"))
		if !ok || err != nil || t[0] != strconv.Itoa(round) {
			continue
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 2 {
			continue
		}
		busy, e1 := strconv.ParseFloat(f[0], 64)
		daemon, e2 := strconv.ParseFloat(f[1], 64)
		if e1 != nil || e2 != nil {
			continue
		}
		s := r.at(key{impl: t[2], backing: t[1], job: parts[2], round: round})
		s.busyJ, s.daemonJ, s.hasCPU = busy, daemon, true
		r.note(t[1], round)
	}
	return r, nil
}

// addResult takes one RESULT line split at the dots:
// perf IMPL BACKING JOB rROUND FIELD, perf IMPL BACKING verify FIELD, perf IMPL BACKING connect_s rROUND.
func (r *run) addResult(k []string, v string) {
	if len(k) == 5 && k[3] == "verify" && k[4] == "err" {
		r.verify[[2]string{k[1], k[2]}] = v
		return
	}
	if len(k) == 5 && k[3] == "connect_s" {
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			r.connect[[2]string{k[1], k[2]}] = append(r.connect[[2]string{k[1], k[2]}], x)
		}
		return
	}
	if len(k) != 6 || !strings.HasPrefix(k[4], "r") {
		return
	}
	round, err := strconv.Atoi(k[4][1:])
	if err != nil {
		return
	}
	s := r.at(key{impl: k[1], backing: k[2], job: k[3], round: round})
	r.note(k[2], round)
	s.set(k[5], v)
}

func (r *run) note(backing string, round int) {
	if round > r.rounds {
		r.rounds = round
	}
	for _, b := range r.backings {
		if b == backing {
			return
		}
	}
	r.backings = append(r.backings, backing)
}
