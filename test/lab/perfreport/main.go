// Command perfreport turns the outputs of the lab's perf scenario (test/lab/run.sh perf) into the
// results table: for every backing and fio job, the median (min–max) over the rounds of IOPS,
// p50/p99 completion latency and the target guest's busy CPU time per I/O, for rdmablkd and for
// kernel nvmet-rdma, with the ratios ours/kernel. For the NVMe/TCP variant (test/lab/run.sh
// perf-tcp, whose -dir holds a file "transport" saying tcp) the kernel target is nvmet-tcp and
// the headings and rows say TCP. For an A/B run of two rdmablkd builds (test/lab/run.sh
// BASELINE=REV perf, whose -dir holds a file "versus") the sides are "new" (impl ours) and "base"
// (impl kernel: rdmablkd built from REV), each heading with its commit, and the ratios new/base;
// that report names no kernel target.
//
//	go run ./test/lab/perfreport -dir $LAB_DIR/share/out/RUN-perf >> results.md
//
// Inputs in -dir (written by guest/scenario-perf-{target,init}.sh): results.txt ("KEY VALUE"
// lines, keys perf.IMPL.BACKING.JOB.rROUND.{iops,ios,p50_us,p99_us,err}), serve.N ("ROUND BACKING
// IMPL"), job.N.JOB.rROUND.cpu ("BUSY_JIFFIES DAEMON_JIFFIES" of the target guest), target.hz
// transport ("rdma" or "tcp"; absent: rdma) and, in A/B runs only, versus ("new BUILD-INFO" and
// "base BUILD-INFO" lines).
//
// With -mode frontends it reports the frontends scenario (test/lab/run.sh frontends) instead: one
// rdmablkd volume through the kernel nvme-rdma host, rdmablk --frontend ublk and --frontend nbd in
// the initiator guest, per configuration and fio job the median (min–max) of IOPS, p50/p99 and the
// initiator guest's busy CPU per I/O, the ratios ublk/kernel and nbd/kernel against issue 13's
// goals, verify errors and leftovers. Input: results.txt only (keys fe.*, written by
// guest/scenario-frontends-init.sh).
//
//	go run ./test/lab/perfreport -mode frontends -dir $LAB_DIR/share/out/RUN-frontends
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("dir", "", "the run's output directory")
	mode := flag.String("mode", "perf", "which scenario's outputs: perf or frontends")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "perfreport: -dir is required")
		os.Exit(2)
	}
	switch *mode {
	case "perf":
	case "frontends":
		fe, err := loadFrontends(os.DirFS(*dir))
		if err != nil {
			fmt.Fprintln(os.Stderr, "perfreport:", err)
			os.Exit(1)
		}
		writeFrontends(os.Stdout, fe)
		return
	default:
		fmt.Fprintf(os.Stderr, "perfreport: -mode %q: want perf or frontends\n", *mode)
		os.Exit(2)
	}
	run, err := load(os.DirFS(*dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfreport:", err)
		os.Exit(1)
	}
	write(os.Stdout, run)
}
