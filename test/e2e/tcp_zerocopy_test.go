package e2e

import (
	"bytes"
	"testing"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
)

// TestTCPZeroCopyCapsules: with zero-copy capsule sends on (a 4 KiB
// threshold, loopback allowed), rounds of pipelined 4 KiB writes rewrite
// the whole namespace with a new pattern each, every buffer refilled as
// soon as its write completes; then the namespace reads back as the last
// round wrote it, with and without digests, and the writes went out
// zero-copy.
func TestTCPZeroCopyCapsules(t *testing.T) {
	if !tcpzc.Works() {
		t.Skip("no zero-copy send on this kernel")
	}
	tcpzc.AllowLoopback.Store(true)
	t.Cleanup(func() { tcpzc.AllowLoopback.Store(false) })
	for _, dg := range []bool{false, true} {
		name := "plain"
		if dg {
			name = "digests"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envConfig{tcp: true, digests: dg, blockSize: 512, blocks: 2048})
			o := e.opts()
			o.IOQueues, o.QueueDepth, o.ZeroCopySendMin = 1, 32, 4096
			c := e.connect(t, o)
			ns := c.Namespaces()[0]
			sends := initiator.TCPZeroCopyStats().Sends
			const rounds = 4
			for seed := uint64(1); seed <= rounds; seed++ {
				if err := asyncSweep(c.Queue(0), ns, initiator.IOWrite, 0, ns.Blocks(), 8, seed); err != nil {
					t.Fatalf("round %d: %v", seed, err)
				}
			}
			if err := asyncSweep(c.Queue(0), ns, initiator.IORead, 0, ns.Blocks(), 8, rounds); err != nil {
				t.Fatal(err)
			}
			want, got := make([]byte, 512), make([]byte, 512)
			for lba := range ns.Blocks() {
				pattern(want, lba, rounds)
				if err := e.backend.ReadAt([][]byte{got}, lba); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("backend LBA %d differs", lba)
				}
			}
			if now := initiator.TCPZeroCopyStats().Sends; now == sends {
				t.Fatal("no capsule went out zero-copy")
			}
		})
	}
}
