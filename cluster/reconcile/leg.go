package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// LegTarget is where a volume's owner reaches one remote copy: the
// copy's node and its data listeners, the subsystem that serves the copy
// (catalog.ReplicaNQN) and the host NQN the owner presents there
// (catalog.OwnerHostNQN of the owner and its epoch: the replica node
// admits no other), and the geometry the copy must have.
type LegTarget struct {
	Node  string
	Addrs []catalog.Listener
	// SubNQN and NSID name the copy's namespace (NSID is always 1).
	SubNQN  string
	NSID    uint32
	HostNQN string
	Volume  string
	// Size (bytes) and BlockSize are the volume's: a leg whose geometry
	// differs is refused (the replica node may not have grown it yet).
	Size      int64
	BlockSize int
}

// LegOpener connects to one remote copy of a volume and returns it as a
// backend (in rdmablkd: internal/replica.Open over our NVMe-oF
// initiator). The reconciler calls it from its pass or a rebuild
// retry, with a context bounding the attempt; it may block until then.
// The reconciler owns the returned backend (the mirror closes it).
type LegOpener func(ctx context.Context, t LegTarget) (blockdev.Backend, error)

// Timing of leg connections.
const (
	// legOpenWait bounds how long a new owner waits for a copy the
	// catalogue calls in sync or syncing to accept it (the copy's node
	// applies the failover on its own pass) before serving without it:
	// the first write then records the copy faulted.
	legOpenWait = 10 * time.Second
	// legRetryMin and legRetryMax bound the backoff between attempts to
	// bring a faulted copy back (reconnect, then rebuild).
	legRetryMin = 1 * time.Second
	legRetryMax = 30 * time.Second
	// faultTimeout bounds Membership.Fault's raft proposal (the mirror's
	// writes wait for it).
	faultTimeout = 10 * time.Second
)

// deadLeg stands in for a copy the owner could not reach: it has the
// volume's geometry and fails every operation, so the mirror records the
// copy faulted on the first write (through raft, before that write
// completes) and marks what the copy misses dirty.
type deadLeg struct {
	bs     int
	blocks uint64
	err    error
}

func (d *deadLeg) BlockSize() int                                      { return d.bs }
func (d *deadLeg) Blocks() uint64                                      { return d.blocks }
func (d *deadLeg) ReadAt([][]byte, uint64) error                       { return d.fail() }
func (d *deadLeg) WriteAt([][]byte, uint64, blockdev.WriteFlags) error { return d.fail() }
func (d *deadLeg) Flush() error                                        { return d.fail() }
func (d *deadLeg) WriteZeroes(uint64, uint64) error                    { return d.fail() }
func (d *deadLeg) Discard(uint64, uint64) error                        { return d.fail() }
func (d *deadLeg) Close() error                                        { return nil }

func (d *deadLeg) fail() error {
	return fmt.Errorf("%w: copy unreachable: %v", blockdev.ErrMedium, d.err)
}
