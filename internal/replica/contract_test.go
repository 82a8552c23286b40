package replica

import (
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestContract runs the backend contract suite against a Leg over a real
// in-process target (target + target/rdma on the soft provider) serving a
// mem backend.
func TestContract(t *testing.T) {
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		fabric := soft.NewFabric()
		n := newReplica(t, fabric, mem.New(blocks, bs))
		return openLeg(t, legConfig(fabric, n))
	}, blockdevtest.Caps{Persistent: true, Capabilities: blockdevtest.CapAsync | blockdevtest.CapFixedBuffers})
}
