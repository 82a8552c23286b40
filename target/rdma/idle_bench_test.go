package rdma

import (
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIdleCPU reports the CPU an idle target uses (cpu-%, of one
// core) with 64 connected I/O queues and no I/O, over 200 ms per
// iteration, after the pollers settled. Hosts and target share the
// process; idle soft-provider engines block in reads and cost nothing.
func BenchmarkIdleCPU(b *testing.B) {
	g := newRig(b, rigOpts{})
	for range 64 {
		g.connectQueue(rawOpts{qid: 1, depth: 32}, testSubNQN, testHostNQN)
	}
	time.Sleep(100 * time.Millisecond) // let the pollers fall asleep
	b.ResetTimer()
	var busy, wall time.Duration
	for i := 0; i < b.N; i++ {
		c0, t0 := cpuTime(), time.Now()
		time.Sleep(200 * time.Millisecond)
		busy += cpuTime() - c0
		wall += time.Since(t0)
	}
	b.ReportMetric(100*float64(busy)/float64(wall), "cpu-%")
}
