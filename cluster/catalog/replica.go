package catalog

import (
	"fmt"
	"slices"
	"time"
)

// Replica states. Every change of a replica's state goes through raft;
// the owner proposes them carrying its ownership epoch (Volume.Epoch).
const (
	// ReplicaSyncing: the replica is catching up (a rebuild runs or is
	// due); the owner mirrors new writes to it but it is not counted as
	// a copy of the data and may not become owner.
	ReplicaSyncing = "syncing"
	// ReplicaInSync: the replica holds every write the owner has
	// acknowledged. The owner acknowledges a write only when every
	// in-sync replica has it.
	ReplicaInSync = "in-sync"
	// ReplicaFaulted: the replica missed a write (or is unreachable); the
	// owner keeps a dirty-region record for it and restarts it as
	// syncing when it returns.
	ReplicaFaulted = "faulted"
)

// Replica limits.
const (
	// MaxReplicas bounds Volume.Replicas.
	MaxReplicas = 3
	// RebuildReportInterval is how often, at most, an owner should
	// propose OpReportRebuild for one copy: progress is for people
	// (volume status), and every report is a raft entry.
	RebuildReportInterval = 5 * time.Second
)

// Replica is one copy of a volume's data: a backing file on a node.
type Replica struct {
	// Node holds the copy; the replicas of a volume are on distinct
	// nodes.
	Node string `json:"node"`
	// Path is the backing file's name in that node's volume directory
	// (ValidVolumePath; chosen by the leader, unique per node).
	Path string `json:"path"`
	// State is one of the Replica* states.
	State string `json:"state"`
	// Message says why the replica faulted (empty otherwise).
	Message string `json:"message,omitempty"`
	// Rebuild is the progress of the copy that brings a syncing replica
	// in sync, as the owner last reported it (nil: not started or not
	// syncing).
	Rebuild *Rebuild `json:"rebuild,omitempty"`
}

// Rebuild is a rebuild's progress as the owner reports it (at a low
// rate: a few times a minute at most). All figures are the owner's.
type Rebuild struct {
	// Full: the whole volume is copied (the replica is new or its
	// dirty-region record was lost); otherwise only dirty regions.
	Full bool `json:"full,omitempty"`
	// Copied of Total bytes are on the replica. 0 <= Copied <= Total.
	Copied int64 `json:"copied"`
	Total  int64 `json:"total"`
	// Rate is the copy rate in bytes per second over the last interval
	// (0 = unknown).
	Rate int64 `json:"rate,omitempty"`
	// Updated is when the owner measured these figures (its clock).
	Updated time.Time `json:"updated,omitzero"`
}

// Percent is the share of the rebuild done, 0 to 100.
func (r Rebuild) Percent() float64 {
	if r.Total <= 0 {
		return 0
	}
	return 100 * float64(r.Copied) / float64(r.Total)
}

// ETA is the time the rest of the copy takes at Rate, counted from
// Updated; ok is false when the rate is unknown.
func (r Rebuild) ETA() (d time.Duration, ok bool) {
	if r.Rate <= 0 {
		return 0, false
	}
	left := r.Total - r.Copied
	if left <= 0 {
		return 0, true
	}
	sec := float64(left) / float64(r.Rate)
	if sec > float64(1<<62)/float64(time.Second) {
		sec = float64(1<<62) / float64(time.Second)
	}
	return time.Duration(sec * float64(time.Second)), true
}

func (r *Rebuild) validate() error {
	if r.Copied < 0 || r.Total < 0 || r.Copied > r.Total || r.Rate < 0 {
		return fmt.Errorf("%w: rebuild progress %d of %d bytes at %d B/s: want 0 <= copied <= total, rate >= 0", ErrInvalid, r.Copied, r.Total, r.Rate)
	}
	return nil
}

// DesiredReplicas is the volume's desired number of copies: Replicas, or
// 1 for entries written before replication (Replicas 0).
func (v Volume) DesiredReplicas() int { return max(v.Replicas, 1) }

// OwnerEpoch is the volume's ownership epoch: Epoch, or 1 for entries
// written before epochs (Epoch 0).
func (v Volume) OwnerEpoch() uint64 { return max(v.Epoch, 1) }

// ReplicaList returns a copy of the volume's replicas. Entries written
// before replication have none recorded: their one replica is the
// owner's backing file, in sync.
func (v Volume) ReplicaList() []Replica {
	if len(v.ReplicaSet) == 0 {
		return []Replica{{Node: v.Node, Path: v.Path, State: ReplicaInSync}}
	}
	return cloneReplicas(v.ReplicaSet)
}

// Replica returns the replica on node.
func (v Volume) Replica(node string) (Replica, bool) {
	for _, r := range v.ReplicaList() {
		if r.Node == node {
			return r, true
		}
	}
	return Replica{}, false
}

// InSyncNodes returns the nodes of the in-sync replicas, in replica order.
func (v Volume) InSyncNodes() []string {
	var out []string
	for _, r := range v.ReplicaList() {
		if r.State == ReplicaInSync {
			out = append(out, r.Node)
		}
	}
	return out
}

// HasReplicaOn reports whether node holds a replica of v.
func (v Volume) HasReplicaOn(node string) bool {
	_, ok := v.Replica(node)
	return ok
}

func cloneReplicas(rs []Replica) []Replica {
	if rs == nil {
		return nil
	}
	out := make([]Replica, len(rs))
	for i, r := range rs {
		if r.Rebuild != nil {
			rb := *r.Rebuild
			r.Rebuild = &rb
		}
		out[i] = r
	}
	return out
}

// clone returns a deep copy.
func (v Volume) clone() Volume {
	v.ReplicaSet = cloneReplicas(v.ReplicaSet)
	if v.Resync != nil {
		rs := *v.Resync
		v.Resync = &rs
	}
	return v
}

// Clone returns a deep copy.
func (v Volume) Clone() Volume { return v.clone() }

// materialize returns v with its replica list recorded (entries from
// before replication get their implicit one) and the defaults of
// Replicas and Epoch filled in. The result shares nothing with v.
func (v Volume) materialize() Volume {
	v.ReplicaSet = v.ReplicaList()
	v.Replicas = v.DesiredReplicas()
	v.Epoch = v.OwnerEpoch()
	return v
}

// checkReplicas checks the replica invariants of a volume (not a
// tombstone): 1..MaxReplicas replicas on distinct nodes, valid states and
// paths, Replicas within bounds, the owner an in-sync replica (so there
// is always at least one), and rebuild records only on syncing replicas.
// Apply checks every volume it changes with it before storing, so a
// command that would break an invariant is rejected whole.
func (v *Volume) checkReplicas() error {
	rs := v.ReplicaList()
	if v.Replicas < 0 || v.Replicas > MaxReplicas {
		return fmt.Errorf("%w: volume %q: %d replicas: want 1 to %d", ErrInvalid, v.Name, v.Replicas, MaxReplicas)
	}
	if len(rs) > MaxReplicas {
		return fmt.Errorf("%w: volume %q: %d replicas: at most %d", ErrConflict, v.Name, len(rs), MaxReplicas)
	}
	seen := map[string]bool{}
	owner := false
	for _, r := range rs {
		switch {
		case !ValidName(r.Node):
			return fmt.Errorf("%w: volume %q: replica node %q: want %s", ErrInvalid, v.Name, r.Node, NamePattern)
		case seen[r.Node]:
			return fmt.Errorf("%w: volume %q: two replicas on node %s", ErrConflict, v.Name, r.Node)
		case !ValidVolumePath(r.Path):
			return fmt.Errorf("%w: volume %q: replica path %q on %s: want a plain file name (%s, then %s)", ErrInvalid, v.Name, r.Path, r.Node, NamePattern, VolumeFileSuffix)
		case r.State != ReplicaSyncing && r.State != ReplicaInSync && r.State != ReplicaFaulted:
			return fmt.Errorf("%w: volume %q: replica state %q on %s: want %s, %s or %s", ErrInvalid, v.Name, r.State, r.Node, ReplicaSyncing, ReplicaInSync, ReplicaFaulted)
		case r.Rebuild != nil && r.State != ReplicaSyncing:
			return fmt.Errorf("%w: volume %q: replica on %s is %s but has rebuild progress", ErrInvalid, v.Name, r.Node, r.State)
		}
		if r.Rebuild != nil {
			if err := r.Rebuild.validate(); err != nil {
				return err
			}
		}
		seen[r.Node] = true
		if r.Node == v.Node {
			if r.State != ReplicaInSync {
				return fmt.Errorf("%w: volume %q: the owner %s must be an in-sync replica (it is %s)", ErrConflict, v.Name, v.Node, r.State)
			}
			owner = true
		}
	}
	if !owner {
		return fmt.Errorf("%w: volume %q: the owner %s holds no replica", ErrConflict, v.Name, v.Node)
	}
	if v.Resync != nil {
		return v.Resync.validate()
	}
	return nil
}

// replicaIndex returns the index of node's replica in v.ReplicaSet (v
// materialized), or -1.
func (v *Volume) replicaIndex(node string) int {
	return slices.IndexFunc(v.ReplicaSet, func(r Replica) bool { return r.Node == node })
}
