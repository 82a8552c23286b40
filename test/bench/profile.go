package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// replProfile is the outcome of a -repl-profile run: one randwrite on one
// volume with both daemons CPU-profiled.
type replProfile struct {
	vol, pl     string
	run         ioRun
	ios         float64
	syscalls    [2][2]float64 // per node: read-class, write-class per I/O
	busy        string        // each CPU's busy share over the run
	load, after string
	threads     string
	profiles    [2]string // ra, rb
	cats        [2][]float64
	total       [2]float64
}

// profCategory is one row of the per-write CPU breakdown: the samples
// whose stack matches re and no earlier category's.
type profCategory struct {
	name string
	re   *regexp.Regexp
	// emulated: work a hardware HCA does without the host CPU (the soft
	// provider's transport); reported apart.
	emulated bool
}

var profCategories = []profCategory{
	{"soft provider: frames out (TCP write of SENDs, ACKs; loopback receive processing in the sender's system call)", regexp.MustCompile(`soft\.\(\*frameWriter\)`), true},
	{"soft provider: frames in (TCP read, rx engine placing data and completions)", regexp.MustCompile(`soft\.\(\*qp\)\.rxLoop|soft\.\(\*frameReader\)`), true},
	{"soft provider: posts, CQ, completion-channel eventfd, tx engine", regexp.MustCompile(`verbs/soft\.`), true},
	{"file backend: io_uring submit (the kernel's block and virtio work for O_DIRECT)", regexp.MustCompile(`uring\.\(\*Ring\)\.Submit`), false},
	{"file backend: completion wait and reap (eventfd)", regexp.MustCompile(`blockdev/file\.`), false},
	{"mirror fan-out + replica leg (blockdev/mirror, internal/replica)", regexp.MustCompile(`blockdev/mirror\.|internal/replica\.`), false},
	{"initiator (the replica leg's session)", regexp.MustCompile(`rdmablk/initiator\.`), false},
	{"target core + target/rdma", regexp.MustCompile(`rdmablk/target`), false},
	{"Go scheduler: idle, netpoll (epoll_wait), wake-ups", regexp.MustCompile(`runtime\.(findRunnable|schedule|park_m|mcall|netpoll|notewakeup|wakep|startm|stopm|futex|gosched_m|goschedImpl|ready|goready)`), false},
	{"raft, cluster agent, control API", regexp.MustCompile(`hashicorp|rdmablk/cluster|rdmablk/internal/daemon|net/http`), false},
	{"other (GC, runtime)", regexp.MustCompile(``), false},
}

var sampleValue = regexp.MustCompile(`^([0-9.]+)(ns|us|µs|ms|s)$`)

// profileBreakdown splits the CPU samples of a Go CPU profile into
// profCategories (seconds each) with `go tool pprof -traces` (the
// profile carries its symbols) and returns them and the total.
func profileBreakdown(ctx context.Context, path string) ([]float64, float64, error) {
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-traces", path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, 0, fmt.Errorf("go tool pprof -traces %s: %v\n%s", path, err, errb.String())
	}
	cats := make([]float64, len(profCategories))
	var total float64
	for _, block := range strings.Split(out.String(), "-----------+")[1:] {
		lines := strings.Split(strings.TrimSpace(block), "\n")
		if len(lines) < 2 {
			continue
		}
		// lines[0] is the rest of the separator; then "<value> <frame>"
		// and one frame per line.
		f := strings.Fields(lines[1])
		if len(f) < 2 {
			continue
		}
		m := sampleValue.FindStringSubmatch(f[0])
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			continue
		}
		switch m[2] {
		case "ns":
			v /= 1e9
		case "us", "µs":
			v /= 1e6
		case "ms":
			v /= 1e3
		}
		stack := f[1] + "\n" + strings.Join(lines[2:], "\n")
		total += v
		for i, c := range profCategories {
			if c.re.MatchString(stack) {
				cats[i] += v
				break
			}
		}
	}
	if total == 0 {
		return nil, 0, fmt.Errorf("%s: no samples", path)
	}
	return cats, total, nil
}

// replProfileMarkdown is the report's section for a -repl-profile run.
func (r *report) replProfileMarkdown(p func(format string, args ...any)) {
	x := r.replProf
	if x == nil {
		return
	}
	p("## (f) profile: 4 KiB randwrite QD32 on the %s volume, placement %s\n\n", x.vol, x.pl)
	p("- %.0f IOPS, %.0f I/Os; load avg %s → %s; busy over the run (every process of the host): %s; %s\n", x.run.iops, x.ios, x.load, x.after, x.busy, x.threads)
	p("- CPU per write (utime+stime over the run / I/Os): owner %.1f µs, replica node %.1f µs, load generator %.1f µs\n", x.run.cpuTgt/x.ios*1e6, x.run.cpuPeer/x.ios*1e6, x.run.cpuInit/x.ios*1e6)
	p("- System calls per write (/proc/<pid>/io syscr, syscw: read/write/readv/writev…, not io_uring_enter or epoll_wait): owner %.2f read-class, %.2f write-class; replica node %.2f, %.2f\n", x.syscalls[0][0], x.syscalls[0][1], x.syscalls[1][0], x.syscalls[1][1])
	p("- Volume files: %s\n\n", r.replDir)
	p("| where the CPU goes (pprof samples; each sample counted in the first row whose functions are on its stack) | owner µs per write | replica node µs per write |\n|---|---|---|\n")
	var emu [2]float64
	for i, c := range profCategories {
		p("| %s | %.1f | %.1f |\n", c.name, x.cats[0][i]/x.ios*1e6, x.cats[1][i]/x.ios*1e6)
		if c.emulated {
			emu[0] += x.cats[0][i]
			emu[1] += x.cats[1][i]
		}
	}
	p("| **total sampled** | **%.1f** | **%.1f** |\n", x.total[0]/x.ios*1e6, x.total[1]/x.ios*1e6)
	p("| of which the soft provider's emulation of the HCA (the first three rows) | %.1f (%.0f%%) | %.1f (%.0f%%) |\n\n", emu[0]/x.ios*1e6, 100*emu[0]/x.total[0], emu[1]/x.ios*1e6, 100*emu[1]/x.total[1])
	p("Profiles: `%s`, `%s` (`go tool pprof -top <file>`). They cover each daemon's whole life (start, cluster formation, volume creation and the run); the run dominates. Their allocations: `<node>.mem.pprof` beside them (`go tool pprof -sample_index=alloc_space -top <file>`). On RDMA hardware the first three rows are done by the HCA (a doorbell write and a CQ poll remain on the CPU).\n\n", x.profiles[0], x.profiles[1])
}
