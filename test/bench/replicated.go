package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/file"
)

// Subsystems of the replicated-volume rows: the same two nodes serve a
// 1-replica and a 2-replica volume, each in its own subsystem.
const (
	repl1NQN = "nqn.2026-11.io.rdmablk:bench-r1"
	repl2NQN = "nqn.2026-11.io.rdmablk:bench-r2"
)

// Goals of issue 16 (Must show: benchmark): a 2-replica volume keeps at
// least these shares of a 1-replica volume's IOPS on the same nodes.
const (
	goalReplWrite = 0.7
	goalReplRead  = 0.95
)

// replJobs are the rows: 4 KiB randread QD32 and randwrite QD32.
var replJobs = ioJobs[:2]

// replResult is one job's runs on the 1-replica and the 2-replica
// volume, one per repeat, and the load average around them.
type replResult struct {
	job        ioJob
	pin        replPlacement
	one, two   []ioRun
	loadBefore string
	loadAfter  string
}

// replPlacement is where the replicated rows' processes run.
type replPlacement struct {
	name           string // "split", "owner-alone" or "none"
	owner, replica cpuSet // the two rdmablkd nodes
	gen            cpuSet // `rdmablk bench`
	threads        string // the pinning check after the runs
}

// The placements of -repl-pin. Three hosts (load generator, owner,
// replica) on two CPUs: one CPU must hold two of them.
var replPlacementsByName = map[string]replPlacement{
	// split: the owner shares CPU 0 with the load generator, the replica
	// has CPU 1 (the replica's work moves off the owner's CPU).
	"split": {name: "split", owner: cpuSet{0}, replica: cpuSet{1}, gen: cpuSet{0}},
	// owner-alone: the owner has CPU 0, the load generator shares CPU 1
	// with the replica; every message between the three crosses CPUs in
	// both runs, as it crosses hosts in a deployment.
	"owner-alone": {name: "owner-alone", owner: cpuSet{0}, replica: cpuSet{1}, gen: cpuSet{1}},
	// one-cpu: all three on CPU 0 — no message crosses CPUs, and the
	// replica's work competes with the owner's (the 2-replica write's
	// whole CPU cost, without cross-CPU wake-ups).
	"one-cpu": {name: "one-cpu", owner: cpuSet{0}, replica: cpuSet{0}, gen: cpuSet{0}},
	"none":    {name: "none"},
}

// replPlacements resolves -repl-pin: a comma-separated list of
// placements, "both" (split,none) or "all".
func replPlacements(mode string) ([]replPlacement, error) {
	switch mode {
	case "both":
		mode = "split,none"
	case "all":
		mode = "split,owner-alone,none"
	}
	var out []replPlacement
	for _, n := range strings.Split(mode, ",") {
		pl, ok := replPlacementsByName[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("-repl-pin %q: want split, owner-alone, one-cpu or none (comma-separated), both or all", mode)
		}
		if pl.replica.String() != pl.owner.String() && runtime.NumCPU() < 2 {
			return nil, fmt.Errorf("-repl-pin %s needs 2 CPUs, this host has %d", pl.name, runtime.NumCPU())
		}
		out = append(out, pl)
	}
	return out, nil
}

// runReplicated runs the replicated rows once per placement of -repl-pin,
// each on a fresh two-node cluster (runReplicatedOn).
func runReplicated(ctx context.Context, o *options, work string, rep *report) error {
	pls, err := replPlacements(o.replPin)
	if err != nil {
		return err
	}
	dir, why, err := replDir(o.replDir, work)
	if err != nil {
		return err
	}
	if dir != work {
		if dir, err = os.MkdirTemp(dir, "rdmablk-bench-repl-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	logf("replicated: volume files in %s (%s)", dir, why)
	work = dir
	rep.replDir = dir + " (" + why + ")"
	rep.replLeg = "cluster.replication.transport " + o.replTransport + ": the soft provider, loopback"
	if o.replTransport == "tcp" {
		rep.replLeg = "cluster.replication.transport tcp: NVMe/TCP over loopback"
	}
	if o.replProfile != "" {
		if o.replProfileVol != "r1" && o.replProfileVol != "r2" {
			return fmt.Errorf("-repl-profile-vol %q: want r1 or r2", o.replProfileVol)
		}
		// The daemons write their profiles there: absolute, whatever
		// their working directory.
		abs, err := filepath.Abs(o.replProfile)
		if err != nil {
			return err
		}
		po := *o
		po.replProfile = abs
		o = &po
		if err := os.MkdirAll(o.replProfile, 0o755); err != nil {
			return err
		}
	}
	for _, pl := range pls {
		dir := filepath.Join(work, "repl-"+pl.name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := runReplicatedOn(ctx, o, dir, pl, rep); err != nil {
			return fmt.Errorf("placement %s: %w", pl.name, err)
		}
		if o.replProfile != "" {
			// The daemons have stopped: their profiles are written.
			if x := rep.replProf; x != nil {
				for i, path := range x.profiles {
					c, t, err := profileBreakdown(ctx, path)
					if err != nil {
						return err
					}
					x.cats[i], x.total[i] = c, t
				}
			}
			break
		}
	}
	return nil
}

// runReplicatedOn starts a two-node cluster (two rdmablkd processes, soft
// provider, loopback), creates on the same owner node a 1-replica volume
// and a 2-replica volume whose second copy is on the other node, and runs
// `rdmablk bench` against the owner for each, alternating (A B, B A, …)
// repeats times. The volumes' files are written with data first (no
// holes), identical on both copies. The 2-replica volume must be fully in
// sync before the runs and still after them (else the figures would be
// those of a degraded mirror, and the harness fails). The processes run
// where pl places them (the same for both volumes); the CPU time of both
// nodes is charged per run. With -repl-profile it runs only one profiled
// randwrite on the 2-replica volume instead.
func runReplicatedOn(ctx context.Context, o *options, work string, pl replPlacement, rep *report) error {
	po := *o
	po.genCPUs = pl.gen
	o = &po
	token := filepath.Join(work, "repl-node.token")
	if err := os.WriteFile(token, []byte("bench-replicated-node-token\n"), 0o600); err != nil {
		return err
	}
	type node struct {
		id, dir, addr, tcp, api, raft string
		cpus                          cpuSet
		d                             *daemon
	}
	nodes := []*node{{id: "ra", cpus: pl.owner}, {id: "rb", cpus: pl.replica}}
	for _, n := range nodes {
		n.dir = filepath.Join(work, "repl-"+n.id)
		vols := filepath.Join(n.dir, "cluster", "volumes")
		if err := os.MkdirAll(vols, 0o750); err != nil {
			return err
		}
		var ports [4]int
		for i := range ports {
			p, err := freePort()
			if err != nil {
				return err
			}
			ports[i] = p
		}
		n.addr = fmt.Sprintf("127.0.0.1:%d", ports[0])
		n.raft = fmt.Sprintf("127.0.0.1:%d", ports[1])
		n.api = fmt.Sprintf("127.0.0.1:%d", ports[2])
		n.tcp = fmt.Sprintf("127.0.0.1:%d", ports[3])
		// Data first, identical on both copies (no holes, in sync).
		names := []string{"r2"}
		if n.id == "ra" {
			names = append(names, "r1")
		}
		for _, v := range names {
			p := filepath.Join(vols, v+".img")
			logf("replicated: writing the %d MiB data file %s", o.size>>20, p)
			if err := writeDataFile(p, o.size); err != nil {
				return err
			}
		}
	}
	for i, n := range nodes {
		tcpListener := ""
		if o.replTransport == "tcp" {
			tcpListener = "\n  - {addr: " + n.tcp + ", transport: tcp}"
		}
		join := ""
		if i > 0 {
			join = `"` + nodes[0].api + `"`
		}
		cfg := fmt.Sprintf(`log:
  level: warn
data_dir: %s
transport:
  provider: soft
  profile: default
  poll_spins: %d
listeners:
  - addr: %s%s
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: %s
  raft_bind: %s
  api_bind: %s
  bootstrap: %v
  join: [%s]
  auth: {node_token_file: %s}
  replication: {transport: %s}
`, n.dir, o.replPollSpins, n.addr, tcpListener, n.id, n.raft, n.api, i == 0, join, token, o.replTransport)
		var extra []string
		if o.replProfile != "" {
			extra = []string{"--cpuprofile", filepath.Join(o.replProfile, n.id+".pprof"),
				"--memprofile", filepath.Join(o.replProfile, n.id+".mem.pprof")}
		}
		d, err := startDaemonOn(ctx, o, work, "rdmablkd-"+n.id, n.addr, cfg, n.cpus, extra...)
		if err != nil {
			return err
		}
		n.d = d
		defer d.stop()
	}
	checkPins := func() error {
		var msg []string
		for _, n := range nodes {
			k, err := checkPinned(n.d.pid(), n.cpus)
			if err != nil {
				return err
			}
			msg = append(msg, fmt.Sprintf("%s: %d threads on %s", n.id, k, n.cpus))
		}
		pl.threads = strings.Join(msg, "; ")
		return nil
	}
	a := nodes[0]
	admin := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(o.binDir, "rdmablk"), append([]string{"--api", a.api}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("rdmablk %v: %v\n%s", args, err, out.String())
		}
		return out.String(), nil
	}
	do := func(args ...string) error { _, err := admin(args...); return err }
	// Both nodes registered (the second joins through the first's API):
	// poll external processes.
	if err := retry(60*time.Second, func() error {
		out, err := admin("volume", "create", "probe", "--size", "1M", "--replicas", "2")
		if err == nil {
			return nil
		}
		if strings.Contains(err.Error(), "already") {
			return nil
		}
		_ = out
		return err
	}); err != nil {
		return fmt.Errorf("two-node cluster never formed: %w", err)
	}
	sz := strconv.FormatInt(o.size>>20, 10) + "M"
	for _, args := range [][]string{
		{"volume", "create", "r1", "--size", sz, "--block-size", "4096", "--node", "ra"},
		{"volume", "create", "r2", "--size", sz, "--block-size", "4096", "--node", "ra", "--replicas", "2", "--replica-nodes", "rb"},
		{"subsystem", "create", repl1NQN, "--node", "ra", "--allow-any-host"},
		{"subsystem", "add-ns", repl1NQN, "r1"},
		{"subsystem", "create", repl2NQN, "--node", "ra", "--allow-any-host"},
		{"subsystem", "add-ns", repl2NQN, "r2"},
	} {
		if err := retry(30*time.Second, func() error { return do(args...) }); err != nil {
			return err
		}
	}
	for _, nqn := range []string{repl1NQN, repl2NQN} {
		if err := waitServed(ctx, o, a.d, nqn, 60*time.Second); err != nil {
			return fmt.Errorf("%s never served: %w", nqn, err)
		}
	}
	inSync := func() error {
		out, err := admin("volume", "status", "r2")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "2 of 2 replicas in sync") {
			return fmt.Errorf("volume r2 is not fully in sync:\n%s", out)
		}
		return nil
	}
	if err := retry(60*time.Second, inSync); err != nil {
		return err
	}
	jobs := append([]ioJob(nil), replJobs...)
	if o.replQD > 0 {
		for i := range jobs {
			jobs[i].qd = o.replQD
			jobs[i].name = strings.Replace(jobs[i].name, "QD32", fmt.Sprintf("QD%d", o.replQD), 1)
		}
	}
	if o.replJobs > 1 {
		for i := range jobs {
			jobs[i].jobs = o.replJobs
			jobs[i].name += fmt.Sprintf(" ×%d jobs", o.replJobs)
		}
	}
	b := nodes[1].d
	// run is one `rdmablk bench` on nqn, with the replica node's CPU
	// time over it.
	run := func(j ioJob, nqn string) (ioRun, error) {
		before, err := procCPU(b.pid())
		if err != nil {
			return ioRun{}, err
		}
		r, err := runOursNQN(ctx, o, a.d, j, nqn)
		if err != nil {
			return ioRun{}, err
		}
		after, err := procCPU(b.pid())
		if err != nil {
			return ioRun{}, err
		}
		r.cpuPeer = after - before
		return r, nil
	}
	if o.replProfile != "" {
		nqn := repl2NQN
		if o.replProfileVol == "r1" {
			nqn = repl1NQN
		}
		logf("replicated: profiling %s on %s (%s)", jobs[1].name, nqn, pl.name)
		load := loadAvg()
		var sc [2][2]uint64
		for i, n := range nodes {
			var err error
			if sc[i][0], sc[i][1], err = procSyscalls(n.d.pid()); err != nil {
				return err
			}
		}
		b0, t0, err := cpuTimes()
		if err != nil {
			return err
		}
		r, err := run(jobs[1], nqn)
		if err != nil {
			return err
		}
		b1, t1, err := cpuTimes()
		if err != nil {
			return err
		}
		var busy []string
		for i := range min(len(b0), len(b1)) {
			busy = append(busy, fmt.Sprintf("CPU %d %.0f%%", i, 100*float64(b1[i]-b0[i])/float64(max(t1[i]-t0[i], 1))))
		}
		logf("replicated profile run: busy over the run (all processes of the host): %s", strings.Join(busy, ", "))
		ios := r.bytes / float64(jobs[1].bs)
		var scPer [2][2]float64
		for i, n := range nodes {
			rd, wr, err := procSyscalls(n.d.pid())
			if err != nil {
				return err
			}
			scPer[i] = [2]float64{float64(rd-sc[i][0]) / ios, float64(wr-sc[i][1]) / ios}
			logf("replicated profile run: %s: %.2f read-class and %.2f write-class system calls per I/O", n.id, float64(rd-sc[i][0])/ios, float64(wr-sc[i][1])/ios)
		}
		if err := checkPins(); err != nil {
			return err
		}
		prof := &replProfile{vol: o.replProfileVol, pl: pl.name, run: r, ios: ios, busy: strings.Join(busy, ", "),
			load: load, after: loadAvg(), threads: pl.threads}
		for i, n := range nodes {
			prof.profiles[i] = filepath.Join(o.replProfile, n.id+".pprof")
		}
		prof.syscalls = scPer
		rep.replProf = prof
		logf("replicated profile run: %.0f I/Os, %.0f IOPS; CPU per I/O: owner %.1f µs, replica node %.1f µs, load generator %.1f µs; load %s → %s; %s",
			ios, r.iops, r.cpuTgt/ios*1e6, r.cpuPeer/ios*1e6, r.cpuInit/ios*1e6, load, loadAvg(), pl.threads)
		return nil
	}
	for _, j := range jobs {
		res := replResult{job: j, pin: pl, loadBefore: loadAvg()}
		for i := range o.repeats {
			logf("1 vs 2 replicas: %s: repeat %d/%d", j.name, i+1, o.repeats)
			first, second := repl1NQN, repl2NQN
			if i%2 == 1 {
				first, second = second, first
			}
			x, err := run(j, first)
			if err != nil {
				return err
			}
			y, err := run(j, second)
			if err != nil {
				return err
			}
			if i%2 == 1 {
				x, y = y, x
			}
			res.one = append(res.one, x)
			res.two = append(res.two, y)
		}
		res.loadAfter = loadAvg()
		if err := checkPins(); err != nil {
			return err
		}
		res.pin.threads = pl.threads
		if err := inSync(); err != nil {
			return fmt.Errorf("after %s (the 2-replica figures would be a degraded mirror's): %w", j.name, err)
		}
		rep.repl = append(rep.repl, res)
	}
	return nil
}

// replMarkdown is the report's section for the replicated rows: one
// table per placement.
func (r *report) replMarkdown(p func(format string, args ...any)) {
	r.replProfileMarkdown(p)
	if len(r.repl) == 0 {
		return
	}
	p("## (f) 2-replica vs 1-replica volume (same two rdmablkd nodes, `rdmablk bench` to the owner over the soft provider)\n\n")
	for k, x := range r.repl {
		if k == 0 || x.pin.name != r.repl[k-1].pin.name {
			if x.pin.owner != nil {
				p("### Placement %s: node 1 (owner) on %s, node 2 (replica) on %s, the load generator on %s; GOMAXPROCS=1 each\n\n", x.pin.name, x.pin.owner, x.pin.replica, x.pin.gen)
			} else {
				p("### Placement none: every process on any CPU (the scheduler's choice)\n\n")
			}
			p("| job | 1 replica IOPS | 2 replicas IOPS | 2 / 1 | goal | owner CPU µs per I/O, 1 → 2 replicas | replica node CPU µs per I/O | load generator CPU µs per I/O, 1 → 2 | load avg before → after |\n|---|---|---|---|---|---|---|---|---|\n")
		}
		one := statOf(pick(x.one, func(v ioRun) float64 { return v.iops }))
		two := statOf(pick(x.two, func(v ioRun) float64 { return v.iops }))
		ratios := make([]float64, len(x.one))
		for i := range x.one {
			ratios[i] = x.two[i].iops / x.one[i].iops
		}
		rs := statOf(ratios)
		goal := goalReplRead
		if x.job.rw == "write" {
			goal = goalReplWrite
		}
		bs := float64(x.job.bs)
		perIO := func(runs []ioRun, f func(ioRun) float64) stat {
			return statOf(pick(runs, func(v ioRun) float64 { return f(v) / (v.bytes / bs) * 1e6 }))
		}
		tgt := func(v ioRun) float64 { return v.cpuTgt }
		peer := func(v ioRun) float64 { return v.cpuPeer }
		gen := func(v ioRun) float64 { return v.cpuInit }
		p("| %s | %s | %s | %s | ≥ %.2f: %s | %s → %s | %s | %s → %s | %s → %s |\n", x.job.name, one.f("%.0f"), two.f("%.0f"), rs.f("%.2f"), goal, verdict(rs.med >= goal),
			perIO(x.one, tgt).f("%.1f"), perIO(x.two, tgt).f("%.1f"), perIO(x.two, peer).f("%.1f"),
			perIO(x.one, gen).f("%.1f"), perIO(x.two, gen).f("%.1f"), x.loadBefore, x.loadAfter)
		if k == len(r.repl)-1 || x.pin.name != r.repl[k+1].pin.name {
			if x.pin.threads != "" {
				p("\nPinning checked after the runs (sched_getaffinity of every thread): %s.\n", x.pin.threads)
			}
			p("\n")
		}
	}
	p("The nodes' volume files: %s.\n\n", r.replDir)
	p("Two rdmablkd processes form a two-node cluster on this host. Both volumes are owned by the first node; the 2-replica volume's second copy is on the other node, reached by the owner's mirror through our initiator (%s), so each write completes when both copies have it; reads are served by the owner's copy. The two volumes run back to back within each repeat, the first of the pair alternating (A B, B A, …); ratios are per repeat, then the median. The 2-replica volume is checked fully in sync before and after the runs. Each placement runs on a fresh cluster. Placement split stands in for separate hosts as far as two cores allow: the owner shares CPU 0 with the load generator in both runs, and the replica's work (receive the command with its 4 KiB in-capsule data — sent from the owner's registered buffer, zero copy on hardware, so no RDMA READ — backend write, response) moves to CPU 1. Placement owner-alone gives the owner CPU 0 and puts the load generator with the replica on CPU 1, so that in both runs every message between load generator, owner and replica crosses CPUs, as it would cross hosts. Each placement pins the 1- and the 2-replica runs alike, so only the replica's work differs. The pinning is set with sched_setaffinity on the thread that forks each process, so every thread inherits it. The host is shared (other work may run on either CPU); the load average is recorded per row. CPU µs per I/O: utime+stime of each rdmablkd (/proc/<pid>/stat) and the load generator's rusage over the run, divided by the I/Os it completed; the soft provider's transport (loopback TCP) is part of both nodes' figures. The per-write CPU of both nodes by component (the soft provider's emulation of the HCA apart) comes from `-repl-profile DIR` (one profiled 2- or 1-replica randwrite). Allocations per replicated write: `internal/replica` BenchmarkMirrorLegSubmitWrite and BenchmarkMirrorLegSubmitWriteFixed (Go benchmarks below).\n\n", r.replLeg)
}

// replDir picks the directory of the replicated rows' volume files: dir
// itself unless it is "auto"; then /dev/shm when a file there takes
// O_DIRECT writes (tmpfs does on recent kernels), so that both nodes'
// copies do not share one disk — a 2-copy write would be two writes on
// the same device, which separate hosts do not make (on this host's
// virtual disk one fio job reaches about 52k 4 KiB random writes/s at
// QD32, about what the 1-copy row gets) — else work, on -dir's disk.
func replDir(dir, work string) (string, string, error) {
	if dir != "auto" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", "", fmt.Errorf("-repl-dir %s: not a directory", dir)
		}
		return dir, "-repl-dir", nil
	}
	const shm = "/dev/shm"
	if err := probeODirect(shm); err != nil {
		return work, fmt.Sprintf("-dir's disk, shared by both nodes: %s refuses O_DIRECT (%v)", shm, err), nil
	}
	return shm, "RAM: both nodes' copies on one disk would make a 2-copy write two writes on the same device", nil
}

// probeODirect writes one aligned 4 KiB block with O_DIRECT to a
// temporary file in dir.
func probeODirect(dir string) error {
	f, err := os.CreateTemp(dir, "rdmablk-odirect-")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	fd, err := syscall.Open(name, syscall.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	_, err = syscall.Pwrite(fd, file.AlignedBuffer(4096, 4096), 0)
	return err
}
