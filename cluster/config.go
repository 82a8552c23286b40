package cluster

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Config configures a Node.
type Config struct {
	// ID is the raft server ID (catalog.ValidName).
	ID string
	// Dir holds raft.db and snapshots/. Created if missing.
	Dir string
	// RaftBind is the TCP address raft listens on ("127.0.0.1:0" picks a
	// port).
	RaftBind string
	// RaftAdvertise is the address peers dial; "" means the bound address,
	// which must then not be unspecified (0.0.0.0).
	RaftAdvertise string
	// Bootstrap makes this node found a new single-voter cluster when it
	// has no raft state yet. Set it on exactly one node, once; it is
	// ignored when state exists (restarts are safe).
	Bootstrap bool
	// StreamLayer, when set, carries raft traffic instead of a TCP
	// listener on RaftBind (which is then ignored; the layer's Addr is
	// advertised). Tests use it to cut a node off the network.
	StreamLayer raft.StreamLayer

	// Raft timing; zero takes DefaultHeartbeatTimeout,
	// DefaultElectionTimeout and DefaultLeaderLeaseTimeout, which suit a
	// busy host (raft's own 1 s / 1 s / 500 ms made a loaded 2-core
	// machine change terms every half minute). A leader that fails is
	// replaced after one to two election timeouts. LeaderLeaseTimeout is
	// capped at HeartbeatTimeout. Tests shorten them.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how often an idle leader sends its followers an
	// AppendEntries that only carries its commit index (0 =
	// DefaultCommitTimeout; raft's own is 50 ms, 10 to 20 RPCs a second
	// per follower for ever: about 13 % of a cluster node's CPU on the
	// lab's emulated guests, all of it while nothing changes). Followers
	// still learn a write at once: Apply follows every write with a
	// barrier entry, whose replication carries the new commit index.
	CommitTimeout time.Duration
	// SnapshotThreshold is the number of log entries between snapshots
	// (0 = 8192); TrailingLogs the entries kept after one (0 = 10240).
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// SnapshotInterval is how often raft checks the threshold (0 = 2 min).
	SnapshotInterval time.Duration
	// ApplyTimeout bounds one write (0 = 10 s).
	ApplyTimeout time.Duration
	// Logger receives node events; it is expected to carry the node's ID
	// (the Node never adds a "node" key itself). Raft's own log goes to it
	// at RaftLogLevel ("warn" if empty) and above, as records with raft's
	// fields as attributes (hclog.go).
	Logger       *slog.Logger
	RaftLogLevel string
}

// Raft timing defaults (see Config).
const (
	DefaultHeartbeatTimeout   = 2 * time.Second
	DefaultElectionTimeout    = 2 * time.Second
	DefaultLeaderLeaseTimeout = time.Second
	DefaultCommitTimeout      = time.Second
)

func (c *Config) check() error {
	if !catalog.ValidName(c.ID) {
		return fmt.Errorf("%w: node id %q", ErrBadConfig, c.ID)
	}
	if c.Dir == "" || (c.RaftBind == "" && c.StreamLayer == nil) {
		return fmt.Errorf("%w: dir and raft bind address are required", ErrBadConfig)
	}
	if c.RaftAdvertise != "" {
		if _, err := net.ResolveTCPAddr("tcp", c.RaftAdvertise); err != nil {
			return fmt.Errorf("%w: raft advertise %q: %v", ErrBadConfig, c.RaftAdvertise, err)
		}
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = DefaultElectionTimeout
	}
	if c.LeaderLeaseTimeout == 0 {
		c.LeaderLeaseTimeout = DefaultLeaderLeaseTimeout
	}
	if c.CommitTimeout <= 0 {
		c.CommitTimeout = DefaultCommitTimeout
	}
	if c.ApplyTimeout == 0 {
		c.ApplyTimeout = 10 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}
