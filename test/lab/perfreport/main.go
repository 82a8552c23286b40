// Command perfreport turns the outputs of the lab's perf scenario (test/lab/run.sh perf) into the
// results table: for every backing and fio job, the median (min–max) over the rounds of IOPS,
// p50/p99 completion latency and the target guest's busy CPU time per I/O, for rdmablkd and for
// kernel nvmet-rdma, with the ratios ours/kernel.
//
//	go run ./test/lab/perfreport -dir $LAB_DIR/share/out/RUN-perf >> results.md
//
// Inputs in -dir (written by guest/scenario-perf-{target,init}.sh): results.txt ("KEY VALUE"
// lines, keys perf.IMPL.BACKING.JOB.rROUND.{iops,ios,p50_us,p99_us,err}), serve.N ("ROUND BACKING
// IMPL"), job.N.JOB.rROUND.cpu ("BUSY_JIFFIES DAEMON_JIFFIES" of the target guest) and target.hz.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	dir := flag.String("dir", "", "the perf run's output directory")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "perfreport: -dir is required")
		os.Exit(2)
	}
	run, err := load(os.DirFS(*dir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfreport:", err)
		os.Exit(1)
	}
	write(os.Stdout, run)
}
