package mirror_test

import (
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/null"
)

// BenchmarkWrite4K: one 4 KiB write at a time through a mirror of 1, 2
// and 3 legs (mem or null), blocking (WriteAt) and async (SubmitWrite
// with Async legs). The baseline is the bare leg.
func BenchmarkWrite4K(b *testing.B) {
	const bs, blocks = 4096, 1024
	for _, kind := range []string{"null", "mem"} {
		for _, async := range []bool{false, true} {
			for n := 0; n <= 3; n++ {
				name := fmt.Sprintf("%s/async=%v/legs=%d", kind, async, n)
				if n == 0 {
					name = fmt.Sprintf("%s/async=%v/bare", kind, async)
				}
				b.Run(name, func(b *testing.B) {
					legs := make([]blockdev.Backend, max(n, 1))
					for i := range legs {
						if kind == "null" {
							legs[i] = null.New(blocks, bs)
						} else {
							legs[i] = mem.New(blocks, bs)
						}
						if async {
							legs[i] = newAsyncLeg(legs[i])
						}
					}
					var dev blockdev.Backend
					if n == 0 {
						dev = legs[0]
					} else {
						m := newMirror(b, &okMembership{}, mirrorConfigSmall(), legs...)
						dev = m.Backend()
					}
					defer dev.Close()
					buf := blockdevtest.AlignedBuffer(bs)
					vec := [][]byte{buf}
					// Allocate mem's chunks before timing.
					if err := dev.WriteAt([][]byte{make([]byte, blocks*bs)}, 0, 0); err != nil {
						b.Fatal(err)
					}
					a, _ := dev.(blockdev.Async)
					res := make(doneChan, 1)
					b.SetBytes(bs)
					b.ReportAllocs()
					b.ResetTimer()
					for i := range b.N {
						lba := uint64(i*7) % blocks
						if async {
							if !a.SubmitWrite(buf, lba, 0, res) {
								b.Fatal("SubmitWrite refused")
							}
							if err := <-res; err != nil {
								b.Fatal(err)
							}
						} else if err := dev.WriteAt(vec, lba, 0); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// TestNoAllocsPerIO: blocking and async 4 KiB writes through a mirror of
// three legs (one blocking, two async) allocate nothing.
func TestNoAllocsPerIO(t *testing.T) {
	const bs, blocks = 4096, 64
	m := newMirror(t, &okMembership{}, mirrorConfigSmall(), newAsyncLeg(null.New(blocks, bs)), null.New(blocks, bs), newAsyncLeg(null.New(blocks, bs)))
	defer m.Close()
	dev := m.Backend()
	buf := blockdevtest.AlignedBuffer(bs)
	vec := [][]byte{buf}
	res := make(doneChan, 1)
	a := dev.(blockdev.Async)
	var lba uint64
	io := func() {
		lba = (lba + 5) % blocks
		if err := dev.WriteAt(vec, lba, blockdev.WriteFUA); err != nil {
			t.Fatal(err)
		}
		if !a.SubmitWrite(buf, lba, 0, res) {
			t.Fatal("SubmitWrite refused")
		}
		if err := <-res; err != nil {
			t.Fatal(err)
		}
		if err := dev.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	io() // warm up
	if n := testing.AllocsPerRun(200, io); n != 0 {
		t.Fatalf("%.1f allocations per write+async write+flush", n)
	}
}
