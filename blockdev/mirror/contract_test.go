package mirror_test

import (
	"fmt"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/mem"
)

// TestContract runs the backend contract suite against mirrors of 1, 2
// and 3 mem legs, with blocking legs and with Async legs.
func TestContract(t *testing.T) {
	for _, async := range []bool{false, true} {
		for n := 1; n <= 3; n++ {
			t.Run(fmt.Sprintf("legs%d/async=%v", n, async), func(t *testing.T) {
				blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
					m := newMirror(t, &okMembership{}, mirrorConfigSmall(), memLegs(n, blocks, bs, async)...)
					return m.Backend()
				}, blockdevtest.Caps{Persistent: true, Capabilities: blockdevtest.CapAsync | blockdevtest.CapResizer})
			})
		}
	}
}

// TestContractFixed: the suite over legs with fixed buffers and batching,
// which the mirror must expose.
func TestContractFixed(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		m := newMirror(t, &okMembership{}, mirrorConfigSmall(), newFixedLeg(blocks, bs), newFixedLeg(blocks, bs), mem.New(blocks, bs))
		return m.Backend()
	}, blockdevtest.Caps{Persistent: true, Capabilities: blockdevtest.CapAsync | blockdevtest.CapAsyncBatcher | blockdevtest.CapFixedBuffers | blockdevtest.CapResizer})
}
