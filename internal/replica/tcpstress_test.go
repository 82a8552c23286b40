package replica

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/tcpzc"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestLegOverTCPBursts is the lab's replica leg in one process: a leg over
// NVMe/TCP, sending its capsules zero-copy (loopback allowed), to a
// replica whose volume is a file on io_uring, driven as the owner's poll
// groups drive it — two goroutines, each a burst of 1-16 writes of 4 or
// 8 KiB (in-capsule) or 64 KiB (R2T) under one Plug, then a wait for the
// whole burst, so the leg and the replica go idle after every burst. No
// write may go unanswered: a lost command fails the test after lostAfter
// (the leg's own I/O timeout is longer) instead of hanging it. With
// ZeroCopySendMin 4096 (the legs' default) every batch with data goes
// zero-copy; with 32 KiB a connection mixes zero-copy and copying sends.
func TestLegOverTCPBursts(t *testing.T) {
	for _, min := range []int{4096, 32 << 10} {
		t.Run(fmt.Sprintf("zcmin=%d", min), func(t *testing.T) { legOverTCPBursts(t, min) })
	}
}

func legOverTCPBursts(t *testing.T, zcMin int) {
	if !tcpzc.AllowLoopback.CompareAndSwap(false, true) {
		t.Fatal("AllowLoopback already set")
	}
	t.Cleanup(func() { tcpzc.AllowLoopback.Store(false) })
	const blocks, bs = 4096, 4096
	vol, err := file.Open(filepath.Join(t.TempDir(), "replica"), file.Options{Size: blocks * bs, BlockSize: bs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vol.Close() })
	fabric := soft.NewFabric()
	n := newReplica(t, fabric, vol)
	cfg := legConfig(fabric, n)
	cfg.Paths = []string{n.listenTCP(t)}
	cfg.Options.ZeroCopySendMin = zcMin
	leg := openLeg(t, cfg)
	zc0 := initiator.TCPZeroCopyStats().Sends

	const drivers, bursts, lostAfter = 2, 300, 20 * time.Second
	errs := make(chan error, drivers)
	var wg sync.WaitGroup
	for d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(d), 11))
			sizes := []int{4096, 8192, 4096, 64 << 10}
			bufs := make([][]byte, 16)
			for i := range bufs {
				bufs[i] = file.AlignedBuffer(64<<10, 4096)
			}
			done := make(chanDone, len(bufs))
			for i := range bursts {
				k := 1 + rng.IntN(len(bufs))
				leg.Plug()
				for j := range k {
					size := sizes[rng.IntN(len(sizes))]
					lba := uint64(d*blocks/drivers + rng.IntN(blocks/drivers-16))
					if !leg.SubmitWrite(bufs[j][:size], lba, 0, done) {
						leg.Unplug()
						errs <- fmt.Errorf("driver %d, burst %d: write %d refused", d, i, j)
						return
					}
				}
				leg.Unplug()
				timeout := time.After(lostAfter)
				for got := 0; got < k; got++ {
					select {
					case err := <-done:
						if err != nil {
							errs <- fmt.Errorf("driver %d, burst %d: %w", d, i, err)
							return
						}
					case <-timeout:
						errs <- fmt.Errorf("driver %d, burst %d: %d of %d writes unanswered after %v", d, i, k-got, k, lostAfter)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := leg.Stats(); st.Replays != 0 {
		t.Errorf("%d commands replayed: a connection was lost", st.Replays)
	}
	if initiator.TCPZeroCopyStats().Sends == zc0 {
		t.Error("no capsule went out zero-copy")
	}
}
