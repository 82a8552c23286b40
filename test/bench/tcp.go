package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
)

// The NVMe/TCP loopback rows (issue 14): the same rdmablkd that serves the
// data file over the soft provider also listens for NVMe/TCP on 127.0.0.1
// (target/tcp), and `rdmablk bench -t tcp` drives the 4 KiB jobs through
// it, next to fio on the same file and to the soft RDMA run in the same
// repeat.

// tcpRow reports whether job j has an NVMe/TCP twin: the 4 KiB random read
// and write jobs at the harness's depth.
func tcpRow(j ioJob) bool { return j.bs == 4096 }

// tcpListenerConfig picks a free loopback port for the NVMe/TCP listener
// and returns its address and the listeners: entry for the daemon config
// (both "" with -skip-tcp). The entry goes before the soft provider's, so
// the daemon opens it first and the readiness check on the soft address
// covers it (rdmablkd starts its listeners in config order).
func tcpListenerConfig(o *options) (addr, entry string, err error) {
	if o.skipTCP {
		return "", "", nil
	}
	port, err := freePort()
	if err != nil {
		return "", "", err
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return addr, fmt.Sprintf("\n  - addr: %s\n    transport: tcp", addr), nil
}

// runTCPRow runs res.job once over NVMe/TCP when now is set and the job has
// a TCP row (and the daemon an NVMe/TCP listener), appending the run to
// res.tcp. The caller calls it twice per repeat, before and after the soft
// RDMA run, with now set in one of the two, so the order alternates.
func runTCPRow(ctx context.Context, o *options, d *daemon, res *ioResult, now bool) error {
	if !now || d.tcpAddr == "" || !tcpRow(res.job) {
		return nil
	}
	logf("%s: repeat %d/%d: rdmablk bench -t tcp", res.job.name, len(res.tcp)+1, o.repeats)
	r, err := runBench(ctx, o, d, res.job, "--transport", "tcp", "--traddr", d.tcpAddr, "--nqn", benchNQN)
	if err != nil {
		return fmt.Errorf("NVMe/TCP: %w", err)
	}
	res.tcp = append(res.tcp, r)
	return nil
}

// tcpMarkdown writes the NVMe/TCP section (nothing when no job has TCP runs).
func (r *report) tcpMarkdown(p func(format string, args ...any)) {
	var rows []ioResult
	for _, x := range r.io {
		if len(x.tcp) > 0 && len(x.tcp) == len(x.fio) && len(x.tcp) == len(x.ours) {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 {
		return
	}
	p("## (a2) fio on the file vs `rdmablk bench -t tcp` through rdmablkd's NVMe/TCP listener (loopback)\n\n")
	p("| job | fio IOPS | NVMe/TCP IOPS | NVMe/TCP / fio | NVMe/TCP / soft RDMA | target CPU s per GB NVMe/TCP / soft RDMA | initiator CPU s per GB NVMe/TCP / soft RDMA |\n|---|---|---|---|---|---|---|\n")
	perGB := func(runs []ioRun, cpu func(ioRun) float64) stat {
		return statOf(pick(runs, func(v ioRun) float64 { return cpu(v) / (v.bytes / 1e9) }))
	}
	tgt := func(v ioRun) float64 { return v.cpuTgt }
	ini := func(v ioRun) float64 { return v.cpuInit }
	for _, x := range rows {
		vsFio := make([]float64, len(x.tcp))
		vsSoft := make([]float64, len(x.tcp))
		for i, t := range x.tcp {
			vsFio[i] = t.iops / x.fio[i].iops
			vsSoft[i] = t.iops / x.ours[i].iops
		}
		p("| %s | %s | %s | %s | %s | %s / %s | %s / %s |\n", x.job.name,
			statOf(pick(x.fio, func(v ioRun) float64 { return v.iops })).f("%.0f"),
			statOf(pick(x.tcp, func(v ioRun) float64 { return v.iops })).f("%.0f"),
			statOf(vsFio).f("%.2f"), statOf(vsSoft).f("%.2f"),
			perGB(x.tcp, tgt).f("%.2f"), perGB(x.ours, tgt).f("%.2f"),
			perGB(x.tcp, ini).f("%.2f"), perGB(x.ours, ini).f("%.2f"))
	}
	p("\nBoth ends are ours: rdmablkd's NVMe/TCP listener (target/tcp) on 127.0.0.1 and the `rdmablk` initiator with `-t tcp`, same daemon, subsystem and file as table (a). Within each repeat fio ran first, then the soft RDMA and NVMe/TCP runs, their order alternating; ratios are per repeat, then the median. No goal here: issue 14's goal (≥ 1.0× the IOPS of the kernel's nvmet-tcp) is measured in the lab (`test/lab/run.sh perf-tcp`).\n\n")
	p("The comparison is kernel-independent: fio (io_uring, O_DIRECT) on the same file is the reference, and nothing in it needs the kernel's NVMe/TCP. The kernel nvme-tcp host cannot be run here: %s.\n\n", kernelTCPHost())
}

// kernelTCPHost says why the harness does not run the kernel's nvme-tcp
// host on this machine.
func kernelTCPHost() string {
	if _, err := os.Stat("/sys/module/nvme_tcp"); err == nil {
		return "nvme_tcp is loaded on this host, but the harness does not drive it (it would need root, and a second stack to compare lives in the lab)"
	}
	var u syscall.Utsname
	rel := "?"
	if syscall.Uname(&u) == nil {
		rel = utsString(u.Release[:])
	}
	if _, err := os.Stat("/lib/modules/" + rel); err != nil {
		return fmt.Sprintf("nvme_tcp is not loaded and kernel %s has no /lib/modules/%s to load it from", rel, rel)
	}
	return fmt.Sprintf("nvme_tcp is not loaded on kernel %s (the harness loads no modules)", rel)
}
