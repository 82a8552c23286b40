package api

import (
	"time"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// CreateVolumeRequest is the body of POST /v1/volumes.
type CreateVolumeRequest struct {
	Name string `json:"name"`
	// Size in bytes; a multiple of BlockSize.
	Size int64 `json:"size"`
	// BlockSize is 512 (default) or 4096.
	BlockSize int `json:"block_size,omitempty"`
	// Node owns the volume; empty means the node the client talked to.
	Node string `json:"node,omitempty"`
	// Replicas is the number of copies on distinct nodes, 1 (default)
	// to 3. The leader places the copies other than the owner's on
	// reachable nodes whose volume filesystem can hold the volume, the
	// least loaded first, unless ReplicaNodes names them.
	Replicas int `json:"replicas,omitempty"`
	// ReplicaNodes, when set, are the nodes of the copies other than the
	// owner's (Replicas-1 of them, distinct).
	ReplicaNodes []string `json:"replica_nodes,omitempty"`
	// RequestID makes retries idempotent: a create with the ID of one
	// that succeeded answers that volume. Client fills it when empty.
	RequestID string `json:"request_id,omitempty"`
}

// AddReplicaRequest is the body of POST /v1/volumes/{name}/replicas.
type AddReplicaRequest struct {
	// Node gets the new copy (it joins syncing and is copied in full).
	Node string `json:"node"`
}

// FailoverRequest is the body of POST /v1/volumes/{name}/failover.
type FailoverRequest struct {
	// To is the new owner, an in-sync replica; empty lets the leader
	// choose one on a reachable node (catalog.PickNewOwner).
	To string `json:"to,omitempty"`
}

// VolumeStatus is GET /v1/volumes/{name}/status: the volume and its
// replicas as the answering node's catalogue has them.
type VolumeStatus struct {
	Volume catalog.Volume `json:"volume"`
	// Owner is the node serving the volume (ANA-optimized), Epoch its
	// ownership epoch.
	Owner string `json:"owner"`
	Epoch uint64 `json:"epoch"`
	// Replicas is the desired number of copies; InSync how many are.
	Replicas int `json:"replicas"`
	InSync   int `json:"in_sync"`
	// ReplicaStatus lists the copies, the owner's first.
	ReplicaStatus []ReplicaStatus `json:"replica_status"`
	// Resync is the owner's resync after an unclean hand-off, while one
	// runs (nil otherwise).
	Resync *ResyncStatus `json:"resync,omitempty"`
}

// ResyncStatus is a running resync (catalog.Volume.Resync): after a
// failover or an owner restart the owner copies its whole copy to the
// other in-sync copies, which until it finishes may differ from it (and
// from each other) in blocks of writes the lost owner never
// acknowledged. Every acknowledged write is on every in-sync copy
// throughout, so a failover during the resync is as safe as any: the new
// owner abandons this resync and runs its own from its copy.
type ResyncStatus struct {
	// Source is the owner, whose copy the others are made identical to;
	// Targets are the other in-sync copies now.
	Source  string   `json:"source"`
	Targets []string `json:"targets"`
	// Progress is the owner's last report: Copied of Total bytes
	// written to the copies (each region counted once per copy), with
	// Percent done and ETASeconds left at the reported rate (omitted when
	// the rate is unknown), as for a rebuild.
	Progress   catalog.Rebuild `json:"progress"`
	Percent    float64         `json:"percent"`
	ETASeconds *float64        `json:"eta_seconds,omitempty"`
}

// ReplicaStatus is one copy of a volume.
type ReplicaStatus struct {
	Node    string `json:"node"`
	Path    string `json:"path"`
	State   string `json:"state"`
	Owner   bool   `json:"owner,omitempty"`
	Message string `json:"message,omitempty"`
	// Rebuild is the owner's last progress report of a syncing copy,
	// with Percent done and ETASeconds left at the reported rate
	// (omitted when the rate is unknown).
	Rebuild    *catalog.Rebuild `json:"rebuild,omitempty"`
	Percent    float64          `json:"percent,omitempty"`
	ETASeconds *float64         `json:"eta_seconds,omitempty"`
}

// NewVolumeStatus describes v for GET /v1/volumes/{name}/status.
func NewVolumeStatus(v catalog.Volume) VolumeStatus {
	st := VolumeStatus{Volume: v.Clone(), Owner: v.Node, Epoch: v.OwnerEpoch(), Replicas: v.DesiredReplicas()}
	rs := v.ReplicaList()
	for _, r := range rs {
		if r.Node == v.Node {
			st.ReplicaStatus = append(st.ReplicaStatus, replicaStatus(r, true))
		}
	}
	for _, r := range rs {
		if r.State == catalog.ReplicaInSync {
			st.InSync++
		}
		if r.Node != v.Node {
			st.ReplicaStatus = append(st.ReplicaStatus, replicaStatus(r, false))
		}
	}
	if v.Resync != nil {
		rs := &ResyncStatus{Source: v.Node, Progress: *v.Resync, Percent: v.Resync.Percent()}
		for _, n := range v.InSyncNodes() {
			if n != v.Node {
				rs.Targets = append(rs.Targets, n)
			}
		}
		if eta, ok := v.Resync.ETA(); ok {
			sec := eta.Seconds()
			rs.ETASeconds = &sec
		}
		st.Resync = rs
	}
	return st
}

func replicaStatus(r catalog.Replica, owner bool) ReplicaStatus {
	rs := ReplicaStatus{Node: r.Node, Path: r.Path, State: r.State, Owner: owner, Message: r.Message, Rebuild: r.Rebuild}
	if r.Rebuild != nil {
		rs.Percent = r.Rebuild.Percent()
		if eta, ok := r.Rebuild.ETA(); ok {
			sec := eta.Seconds()
			rs.ETASeconds = &sec
		}
	}
	return rs
}

// ResizeVolumeRequest is the body of POST /v1/volumes/{name}/resize.
type ResizeVolumeRequest struct {
	Size int64 `json:"size"`
}

// CreateSubsystemRequest is the body of POST /v1/subsystems.
type CreateSubsystemRequest struct {
	NQN string `json:"nqn"`
	// Node serves the subsystem; empty means the node the client talked to.
	Node         string   `json:"node,omitempty"`
	Serial       string   `json:"serial,omitempty"`
	Model        string   `json:"model,omitempty"`
	AllowAnyHost bool     `json:"allow_any_host"`
	Hosts        []string `json:"hosts,omitempty"`
	// RequestID: as in CreateVolumeRequest.
	RequestID string `json:"request_id,omitempty"`
}

// AddNamespaceRequest is the body of POST /v1/subsystems/{nqn}/namespaces.
type AddNamespaceRequest struct {
	// NSID 0 picks the lowest free one.
	NSID   uint32 `json:"nsid,omitempty"`
	Volume string `json:"volume"`
}

// AddNamespaceResponse answers it.
type AddNamespaceResponse struct {
	NSID      uint32            `json:"nsid"`
	Subsystem catalog.Subsystem `json:"subsystem"`
}

// HostRequest is the body of POST /v1/subsystems/{nqn}/hosts.
type HostRequest struct {
	Host string `json:"host"`
}

// AllowAnyRequest is the body of PUT /v1/subsystems/{nqn}/allow-any.
type AllowAnyRequest struct {
	Allow bool `json:"allow"`
}

// ANARequest is the body of PUT /v1/subsystems/{nqn}/ana.
type ANARequest struct {
	Node  string `json:"node"`
	State string `json:"state"`
}

// JoinRequest is the body of POST /v1/cluster/join: the joining node
// describes itself; the leader adds it as a voter and registers it.
type JoinRequest struct {
	Node catalog.Node `json:"node"`
}

// RemoveRequest is the body of POST /v1/cluster/remove.
type RemoveRequest struct {
	ID string `json:"id"`
}

// StatusResponse is GET /v1/cluster/status: the answering node's view of
// the raft group, and the nodes the catalogue knows.
type StatusResponse struct {
	ID           string    `json:"id"`
	State        string    `json:"state"` // Leader, Follower, Candidate, Shutdown
	Term         uint64    `json:"term"`
	LeaderID     string    `json:"leader_id"`
	LeaderAddr   string    `json:"leader_addr"`
	CommitIndex  uint64    `json:"commit_index"`
	AppliedIndex uint64    `json:"applied_index"`
	LastIndex    uint64    `json:"last_index"`
	LastContact  time.Time `json:"last_contact,omitzero"`
	// Members are the raft configuration's servers, sorted by ID.
	Members []Member       `json:"members"`
	Nodes   []catalog.Node `json:"nodes"`
}

// Member is one server of the raft configuration, with what its own API
// said when asked for this answer (State "unreachable" when it did not
// answer in time).
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	Voter    bool   `json:"voter"`
	// State is the member's raft state as it reports it.
	State string `json:"state,omitempty"`
	// LastContact is when the member last heard from the leader (zero on
	// the leader itself and when unreachable).
	LastContact time.Time `json:"last_contact,omitzero"`
	// Error says why the member could not be asked.
	Error string `json:"error,omitempty"`
}

// HealthResponse is GET /v1/health.
type HealthResponse struct {
	Status    string `json:"status"` // "ok", or "no_leader"
	Node      string `json:"node"`
	RaftState string `json:"raft_state"`
	Leader    string `json:"leader"`
	Applied   uint64 `json:"applied_index"`
	// LastContact is when this node last heard from the leader (zero on
	// the leader).
	LastContact time.Time `json:"last_contact,omitzero"`
}

// ApplyRequest is the body of POST /v1/internal/apply (node to leader).
type ApplyRequest struct {
	Command catalog.Command `json:"command"`
}

// ErrorBody is every error response.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}
