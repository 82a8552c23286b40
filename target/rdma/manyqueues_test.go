package rdma

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/rdmablk/rdmablk/nvme"
)

// manyQueuesEnv sets the number of I/O queues TestManyQueuesMemory
// connects; unset, the test is skipped (it is slow: documented in
// doc.go). The issue 12 item 4 figure: RDMABLK_MANY_QUEUES=1024.
const manyQueuesEnv = "RDMABLK_MANY_QUEUES"

// manyQueuesQDEnv sets the reads in flight per queue (default 1).
const manyQueuesQDEnv = "RDMABLK_MANY_QUEUES_QD"

// rssBytes reads VmRSS from /proc/self/status (0 where unavailable).
func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) >= 2 && string(f[0]) == "VmRSS:" {
			kb, _ := strconv.ParseUint(string(f[1]), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestManyQueuesMemory connects N I/O queues of depth 128 (the Linux
// host's default) over the soft fabric, runs 4 KiB reads with
// RDMABLK_MANY_QUEUES_QD (default 1) in flight on every queue, and reports the process RSS and the bytes the target
// registered. Hosts and target share the process: the hosts' registered
// memory is reported separately.
func TestManyQueuesMemory(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(manyQueuesEnv))
	if n <= 0 {
		t.Skipf("set %s=N to connect N I/O queues", manyQueuesEnv)
	}
	g := newRig(t, rigOpts{cfg: Config{MaxQueueDepth: 128}})
	runtime.GC()
	debug.FreeOSMemory()
	rss0 := rssBytes()
	const depth = 128
	qd, _ := strconv.Atoi(os.Getenv(manyQueuesQDEnv))
	if qd <= 0 || qd > depth {
		qd = 1
	}
	opts := rawOpts{qid: 1, depth: depth, capSize: nvme.SQESize + nvme.ConnectDataSize, dataSize: qd * 4096}
	hs := make([]*rawHost, 0, n)
	hostBytes := 0
	for i := range n {
		o := opts
		o.local = "10.1." + strconv.Itoa(i/250) + "." + strconv.Itoa(i%250+1) + ":0"
		h := g.connectQueue(o, testSubNQN, testHostNQN)
		hs = append(hs, h)
		hostBytes += len(h.mem)
	}
	st := g.l.Stats()
	rss1 := rssBytes()
	t.Logf("%d I/O queues connected: target registered %d MiB, process RSS +%d MiB (hosts registered %d MiB)",
		n, st.RegisteredBytes>>20, (rss1-rss0)>>20, hostBytes>>20)
	for round := range 4 {
		for _, h := range hs {
			for j := range qd {
				s := h.ioSQE(nvme.IORead, uint16(round*qd+j), uint64(j)*4096, 4096, j*4096, 0)
				if err := h.send(capsule(&s, nil)); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, h := range hs {
			for range qd {
				if rsp, err := h.response(g.ctx); err != nil || !rsp.cqe.Status().OK() {
					t.Fatalf("%v %v", err, rsp.cqe.Status())
				}
			}
		}
	}
	st = g.l.Stats()
	rss2 := rssBytes()
	t.Logf("after 4 KiB reads (%d in flight per queue) on all: target registered %d MiB, process RSS +%d MiB (total %d MiB), %d commands",
		qd, st.RegisteredBytes>>20, (rss2-rss0)>>20, rss2>>20, st.Commands)
	if st.Queues != uint64(n) {
		t.Fatalf("%d queues connected, want %d", st.Queues, n)
	}
}
