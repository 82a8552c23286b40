package mirror_test

import (
	"context"
	"fmt"

	"github.com/rdmablk/rdmablk/blockdev/mem"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
)

// catalogue stands for the raft catalogue: Fault commits "faulted".
type catalogue struct{}

func (catalogue) Fault(leg string, cause error) error {
	fmt.Printf("catalogue: %s faulted\n", leg)
	return nil
}

// Example shows the owner's life cycle of a replicated volume: build the
// mirror, add the replicas the catalogue calls in sync, serve
// m.Backend(); when a replica returns, mark it syncing, rebuild it, then
// record it in sync.
func Example() {
	const bs, blocks = 4096, 1024
	m, err := mirror.New(mirror.Config{LocalName: "node1", Local: mem.New(blocks, bs), Membership: catalogue{}})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	if err := m.AddLeg("node2", mem.New(blocks, bs), mirror.InSync); err != nil {
		panic(err)
	}
	dev := m.Backend() // what the target serves
	_ = dev.WriteAt([][]byte{make([]byte, bs)}, 0, 0)

	// The catalogue marked node2 faulted (e.g. its node died) ...
	_ = m.SetState("node2", mirror.Faulted)
	_ = dev.WriteAt([][]byte{make([]byte, bs)}, 7, 0) // dirty: one region
	// ... and it came back: syncing, rebuild, then in sync through raft.
	_ = m.SetState("node2", mirror.Syncing)
	if err := m.Rebuild(context.Background(), "node2", mirror.RebuildOptions{BytesPerSecond: 100 << 20}); err != nil {
		panic(err)
	}
	p, _ := m.Progress("node2")
	fmt.Printf("rebuilt %d of %d bytes\n", p.Done, p.Total)
	_ = m.SetState("node2", mirror.InSync) // after the catalogue committed it
	for _, l := range m.Legs() {
		fmt.Println(l.Name, l.State)
	}
	// Output:
	// rebuilt 1048576 of 1048576 bytes
	// node1 in-sync
	// node2 in-sync
}
