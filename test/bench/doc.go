// Command bench is the performance harness (issue 6). One invocation,
//
//	go run ./test/bench            # defaults: 3 repeats, 5 s per run, 1 GiB file
//	go run ./test/bench -quick     # 3 repeats, 2 s per run, 256 MiB: a smoke run
//
// runs side by side on this host and tabulates, as ratios taken in the same
// run (the machine is shared and noisy):
//
//   - fio (io_uring, O_DIRECT) directly on a file against `rdmablk bench`
//     through rdmablkd (soft provider, loopback) on the same file: 4 KiB
//     random read QD32, 4 KiB random write QD32, 128 KiB sequential read
//     QD8. fio and ours alternate within each repeat.
//   - The same 4 KiB jobs through the same rdmablkd's NVMe/TCP listener on
//     127.0.0.1 (target/tcp) with `rdmablk bench -t tcp`, in the same
//     repeats (fio, then soft RDMA and NVMe/TCP in alternating order):
//     IOPS against fio and against soft RDMA, CPU per GB of both ends
//     (issue 14). -skip-tcp leaves them out. The kernel's nvme-tcp host is
//     not run (no modules on the build host); the lab's perf-tcp scenario
//     compares with it and nvmet-tcp.
//   - 128 KiB RDMA READs over the soft provider (TCP) against a raw
//     loopback TCP stream (Go benchmarks of verbs/soft).
//   - Go micro-benchmarks: target core cost per 4 KiB I/O on the null
//     backend, the RDMA transport + core per I/O in process, initiator cost
//     per I/O, soft provider cost per work request (ns/op, allocs/op).
//   - CPU seconds per GB moved by the target (rdmablkd, from
//     /proc/<pid>/stat) and the initiator (`rdmablk bench`, from its
//     rusage), and fio's own for comparison.
//   - A cluster volume against a static volume on the same file, served by
//     one single-node cluster rdmablkd (the cluster one created through
//     the control API): 4 KiB random read and write QD32, alternating;
//     goal ≥ 0.95× (issue 12). -skip-cluster leaves it out.
//   - A 2-replica volume against a 1-replica volume on the same two nodes
//     (two rdmablkd processes forming a cluster, both volumes owned by
//     the first, the second copy on the other): 4 KiB random write and
//     read QD32 through `rdmablk bench` to the owner, alternating; goals
//     ≥ 0.7× (write) and ≥ 0.95× (read) (issue 16), with the load average
//     around each row and the CPU µs per I/O of both nodes and the load
//     generator. Part of the default set; -skip-replicated leaves it out.
//     The processes are pinned (sched_setaffinity on the thread that forks
//     each, so every thread inherits the mask; GOMAXPROCS=1) per
//     -repl-pin, the same for both volumes: split (default: node 1 and
//     the load generator on CPU 0, node 2 on CPU 1 — the replica's work
//     leaves the owner's CPU, as on separate hosts), owner-alone (node 1
//     on CPU 0, the load generator with node 2 on CPU 1), one-cpu (all
//     three on CPU 0: the replicated write's whole CPU cost without
//     cross-CPU wake-ups), none, a comma-separated list, both
//     (split,none) or all (split,owner-alone,none); each placement runs
//     on a fresh cluster. -repl-profile DIR runs instead one 2-replica
//     (-repl-profile-vol r1: 1-replica) randwrite with both daemons'
//     --cpuprofile and --memprofile and logs their read/write system
//     calls per I/O.
//     The nodes' volume files go to -repl-dir (auto: /dev/shm when it takes
//     O_DIRECT, else -dir's disk, said in the report): on one disk a
//     2-copy write is two writes on the same device, which separate hosts
//     do not make, and this host's virtual disk alone bounds the 1-copy
//     row near fio's own rate.
//     -repl-jobs 2 runs two `rdmablk bench` jobs (one I/O queue each, the
//     row's QD each), the lab replperf's load shape (fio QD32 × 2 jobs);
//     -repl-qd and -repl-poll-spins are for diagnostics. Allocations per
//     replicated write come from the Go benchmarks internal/replica
//     BenchmarkMirrorLegSubmitWrite and BenchmarkMirrorLegSubmitWriteFixed
//     (goal 0).
//   - Memory: RSS of an idle rdmablkd, and the RSS added per connected I/O
//     queue pair at depth 128 (no I/O on them, so the untouched data buffer
//     pool is not resident and is excluded; its registered size is listed).
//
// Every figure is the median of the repeats with the spread (min–max). The
// load average before and after is recorded. The markdown table is written
// to test/bench/results/<UTC date-time>.md and printed.
//
// fio is installed with apt-get when missing. The data file lives in a
// directory on a disk-backed filesystem (-dir, default under /var/tmp),
// since O_DIRECT on tmpfs would measure something else.
//
// The harness is not part of `go test ./...`.
package main
