package tcp

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/tcppdu"
)

// TestZeroCopySendData: with the zero-copy threshold at 4 KiB, rounds of
// 32 pipelined writes (random sizes up to 128 KiB, the same blocks
// rewritten every round) and reads of them: every read returns what the
// round wrote, with and without digests, on a backend that completes
// inline and on io_uring; the reads went out zero-copy.
func TestZeroCopySendData(t *testing.T) {
	if !tcpzc.Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	loopbackZC(t)
	for _, backend := range []string{"mem", "file-uring"} {
		for _, dg := range []tcppdu.Digests{{}, {Header: true, Data: true}} {
			t.Run(backend, func(t *testing.T) {
				var be blockdev.Backend
				if backend != "mem" {
					f, err := file.Open(filepath.Join(t.TempDir(), "vol"), file.Options{Size: testBlocks * testBlock})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.Close() })
					be = f
				}
				r := newRigWith(t, be, func(c *Config) { c.ZeroCopySendMin = 4096 })
				admin := r.adminHost(t, dg, 8192)
				h := r.ioHost(t, admin, dg, 8192)
				const qd, rounds = 32, 6
				rng := rand.New(rand.NewPCG(5, 6))
				sizes := []int{4096, 16384, 65536, 131072}
				for round := range rounds {
					h.writeReadBack(rng, qd, sizes, round)
				}
				if st := r.l.Stats(); st.ZeroCopySends == 0 || st.ZeroCopyBytes < qd*4096 || st.ZeroCopyOff {
					t.Fatalf("no zero-copy sends: %+v", st)
				}
			})
		}
	}
}

// TestZeroCopyFullDepth: a host that keeps its queue full while the
// responses go out zero-copy is never taken for one that overruns its
// queue: the slots the sends hold are not counted as its commands, and
// the reader waits for their notices when it runs out of slots.
func TestZeroCopyFullDepth(t *testing.T) {
	if !tcpzc.Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	loopbackZC(t)
	r := fullDepthStream(t, func(c *Config) { c.ZeroCopySendMin = 4096 })
	if st := r.l.Stats(); st.ZeroCopySends == 0 {
		t.Fatalf("no zero-copy sends: %+v", st)
	}
}

// loopbackZC lets this test's loopback connections send zero-copy.
func loopbackZC(t *testing.T) {
	tcpzc.AllowLoopback.Store(true)
	t.Cleanup(func() { tcpzc.AllowLoopback.Store(false) })
}

// TestZeroCopyOff: a negative ZeroCopySendMin copies every write, and so
// does a connection from a loopback address (the kernel would copy when
// it delivers), whatever the threshold.
func TestZeroCopyOff(t *testing.T) {
	for _, min := range []int{-1, 4096} {
		tcpzc.AllowLoopback.Store(min < 0)
		r := newRigWith(t, mem.New(testBlocks, testBlock), func(c *Config) { c.ZeroCopySendMin = min })
		admin := r.adminHost(t, tcppdu.Digests{}, 8192)
		h := r.ioHost(t, admin, tcppdu.Digests{}, 8192)
		var sqe nvme.SQE
		sqe.SetRW(nvme.IORead, 1, 0, 256<<10/testBlock, 0)
		if got := h.must(&sqe, nil, 256<<10); len(got) != 256<<10 {
			t.Fatalf("read %d bytes", len(got))
		}
		if st := r.l.Stats(); st.ZeroCopySends != 0 {
			t.Fatalf("ZeroCopySendMin %d, loopback ZC %v: zero-copy sends %+v", min, tcpzc.AllowLoopback.Load(), st)
		}
	}
	tcpzc.AllowLoopback.Store(false)
}
