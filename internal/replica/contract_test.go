package replica

import (
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/blockdevtest"
	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// TestContract runs the backend contract suite against a Leg over a real
// in-process target (target + target/rdma on the soft provider) serving a
// mem backend. Reopen opens a new Leg to the same replica, so flushed and
// FUA writes must have reached it.
func TestContract(t *testing.T) {
	type rig struct {
		fabric *soft.Fabric
		n      *replicaNode
	}
	var mu sync.Mutex
	rigs := map[*testing.T]rig{}
	blockdevtest.Run(t, func(t *testing.T, blocks uint64, bs int) blockdev.Backend {
		fabric := soft.NewFabric()
		n := newReplica(t, fabric, mem.New(blocks, bs))
		mu.Lock()
		rigs[t] = rig{fabric, n}
		mu.Unlock()
		return openLeg(t, legConfig(fabric, n))
	}, blockdevtest.Caps{
		Persistent: true,
		Reopen: func(t *testing.T) blockdev.Backend {
			mu.Lock()
			r := rigs[t]
			mu.Unlock()
			return openLeg(t, legConfig(r.fabric, r.n))
		},
		Capabilities: blockdevtest.CapAsync | blockdevtest.CapAsyncBatcher | blockdevtest.CapFixedBuffers,
	})
}
