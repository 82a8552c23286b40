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
	// RequestID makes retries idempotent: a create with the ID of one
	// that succeeded answers that volume. Client fills it when empty.
	RequestID string `json:"request_id,omitempty"`
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
