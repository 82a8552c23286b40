package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Node is one cluster member: raft plus the catalogue FSM.
type Node struct {
	cfg   Config
	log   *slog.Logger
	raft  *raft.Raft
	fsm   *fsm
	store *raftboltdb.BoltStore
	trans *raft.NetworkTransport
}

// Open starts a Node: it opens (or creates) the raft stores under
// cfg.Dir, listens on cfg.RaftBind, and bootstraps a single-voter cluster
// if cfg.Bootstrap is set and there is no state yet. It returns without
// waiting for a leader.
func Open(cfg Config) (n *Node, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o750); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n = &Node{cfg: cfg, log: cfg.Logger, fsm: newFSM()}
	defer func() {
		if err != nil {
			n.closeStores()
		}
	}()
	hl := newHCLogger(cfg.Logger, cfg.RaftLogLevel)

	n.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(cfg.Dir, "raft.db")})
	if err != nil {
		return nil, fmt.Errorf("cluster: raft store: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(cfg.Dir, "snapshots"), 3, hl)
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot store: %w", err)
	}
	var adv net.Addr
	if cfg.RaftAdvertise != "" {
		if adv, err = net.ResolveTCPAddr("tcp", cfg.RaftAdvertise); err != nil {
			return nil, fmt.Errorf("%w: raft advertise: %v", ErrBadConfig, err)
		}
	}
	if cfg.StreamLayer != nil {
		n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream: cfg.StreamLayer, MaxPool: 3, Timeout: 10 * time.Second, Logger: hl,
		})
	} else {
		n.trans, err = raft.NewTCPTransportWithLogger(cfg.RaftBind, adv, 3, 10*time.Second, hl)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: raft transport %s: %w", cfg.RaftBind, err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hl
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLeaseTimeout > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	}
	rc.CommitTimeout = cfg.CommitTimeout
	if rc.LeaderLeaseTimeout > rc.HeartbeatTimeout {
		rc.LeaderLeaseTimeout = rc.HeartbeatTimeout
	}
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}

	if cfg.Bootstrap {
		has, err := raft.HasExistingState(n.store, n.store, snaps)
		if err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		if !has {
			err := raft.BootstrapCluster(rc, n.store, n.store, snaps, n.trans, raft.Configuration{
				Servers: []raft.Server{{ID: rc.LocalID, Address: n.trans.LocalAddr(), Suffrage: raft.Voter}},
			})
			if err != nil {
				return nil, fmt.Errorf("cluster: bootstrap: %w", err)
			}
			n.log.Info("cluster bootstrapped", "raft_addr", n.trans.LocalAddr())
		}
	}
	n.raft, err = raft.NewRaft(rc, n.fsm, n.store, n.store, snaps, n.trans)
	if err != nil {
		return nil, fmt.Errorf("cluster: raft: %w", err)
	}
	return n, nil
}

// ID returns the node's ID.
func (n *Node) ID() string { return n.cfg.ID }

// RaftAddr returns the advertised raft address.
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// IsLeader reports whether this node is the raft leader now.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// Leader returns the leader's ID and raft address ("" when unknown).
func (n *Node) Leader() (id, addr string) {
	a, i := n.raft.LeaderWithID()
	return string(i), string(a)
}

func (n *Node) notLeader() error {
	id, addr := n.Leader()
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

// Apply replicates c through raft and returns its result once committed
// and applied locally. Only the leader accepts writes: elsewhere it
// returns a *NotLeaderError. Catalogue rejections come back as the
// catalog sentinel errors; they are committed too (the log is the
// history of attempts) but change nothing.
func (n *Node) Apply(c catalog.Command) (catalog.Result, error) {
	if n.raft.State() != raft.Leader {
		return catalog.Result{}, n.notLeader()
	}
	b, err := c.Encode()
	if err != nil {
		return catalog.Result{}, fmt.Errorf("%w: %v", catalog.ErrInvalid, err)
	}
	f := n.raft.Apply(b, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		return catalog.Result{}, n.applyErr(err)
	}
	// Followers learn that the entry is committed from the next
	// AppendEntries; with a long CommitTimeout an idle leader sends none
	// for a while. A barrier entry (not waited for) is replicated at once
	// and carries the commit index: the followers apply this write within
	// a round trip (failover, replica admission and the reconcilers
	// depend on it).
	n.raft.Barrier(n.cfg.ApplyTimeout)
	r, ok := f.Response().(applyResult)
	if !ok {
		return catalog.Result{}, fmt.Errorf("cluster: unexpected apply response %T", f.Response())
	}
	return r.res, r.err
}

// applyErr maps the error of an Apply future: before the entry was
// enqueued (not leader, transfer, enqueue timeout) nothing happened and the
// error says so; after it (leadership lost, shutdown) the outcome is
// unknown.
func (n *Node) applyErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrRaftShutdown):
		id, addr := n.Leader()
		return fmt.Errorf("%w (leader now %q at %q): %v", ErrOutcomeUnknown, id, addr, err)
	}
	return n.raftErr(err)
}

func (n *Node) raftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return n.notLeader()
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: %v", ErrTimeout, err)
	}
	return fmt.Errorf("cluster: %w", err)
}

// State returns a deep copy of the catalogue as applied on this node
// (possibly behind the leader).
func (n *Node) State() *catalog.State {
	n.fsm.mu.RLock()
	defer n.fsm.mu.RUnlock()
	return n.fsm.st.Clone()
}

// View calls fn with the live catalogue under the FSM's read lock. fn must
// be quick, must not modify st, must not retain it and must not call
// back into the Node's write path.
func (n *Node) View(fn func(st *catalog.State)) {
	n.fsm.mu.RLock()
	defer n.fsm.mu.RUnlock()
	fn(n.fsm.st)
}

// Watch returns a channel that receives a value after every change to the
// catalogue (coalesced: one pending signal at most; one is pending at
// once), and a cancel function that stops the signals.
func (n *Node) Watch() (<-chan struct{}, func()) { return n.fsm.watch() }

// AddVoter adds (or re-addresses) a voting member. Leader only.
func (n *Node) AddVoter(id, raftAddr string) error {
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	if err := n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return n.raftErr(err)
	}
	n.log.Info("cluster member added", "member", id, "raft_addr", raftAddr)
	return nil
}

// RemoveServer removes a member from the raft configuration. Leader only.
func (n *Node) RemoveServer(id string) error {
	if n.raft.State() != raft.Leader {
		return n.notLeader()
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return n.raftErr(err)
	}
	n.log.Info("cluster member removed", "member", id)
	return nil
}

// Barrier waits until every entry committed before the call is applied
// locally. Leader only.
func (n *Node) Barrier() error {
	if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
		return n.raftErr(err)
	}
	return nil
}

// Snapshot makes raft take a snapshot now.
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return n.raftErr(err)
	}
	return nil
}

// Close shuts raft down and closes the stores. The data stays on disk; a
// later Open with the same Dir resumes. Idempotent.
func (n *Node) Close() error {
	var err error
	if n.raft != nil {
		err = n.raft.Shutdown().Error()
	}
	return errors.Join(err, n.closeStores())
}

func (n *Node) closeStores() error {
	var errs []error
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
		n.trans = nil
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
		n.store = nil
	}
	return errors.Join(errs...)
}
