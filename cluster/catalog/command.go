package catalog

import (
	"encoding/json"
	"fmt"
)

// CommandVersion is the newest command format this package writes and
// applies. Version 2 added replicas, ownership epochs and the replica ops
// (which require it); Apply still takes version 1 entries
// (MinCommandVersion), so logs written before it replay unchanged, and a
// command that uses nothing of version 2 is written as version 1
// (Command.Version), so that nodes from before replication keep applying
// it during a rolling upgrade.
const CommandVersion = 2

// MinCommandVersion is the oldest command format Apply takes.
const MinCommandVersion = 1

// Op names a catalogue operation.
type Op string

// Operations. The fields of Command each one reads are listed.
const (
	OpRegisterNode    Op = "register_node"    // Node (replaces an existing entry with the same ID, keeping its CNTLIDIndex)
	OpRemoveNode      Op = "remove_node"      // NodeID; refused while it owns volumes or subsystems
	OpCreateVolume    Op = "create_volume"    // Volume (Name, UUID, NGUID, Size, BlockSize, Path, Node)
	OpResizeVolume    Op = "resize_volume"    // Name, Size (grow only)
	OpDeleteVolume    Op = "delete_volume"    // Name; leaves a tombstone (VolumeDeleting)
	OpSetVolumeState  Op = "set_volume_state" // Name, State (online or error), Message, Epoch (optional: the owner's, ErrStaleEpoch when stale)
	OpPurgeVolume     Op = "purge_volume"     // Name, NodeID (optional: that replica's file is gone; the name goes with the last); only a tombstone
	OpRepairVolume    Op = "repair_volume"    // Name; error (or creating) → creating, message cleared: the owner retries
	OpCreateSubsystem Op = "create_subsystem" // Subsystem (NQN, Node, Serial, Model, AllowAnyHost, Hosts)
	OpDeleteSubsystem Op = "delete_subsystem" // NQN
	OpAddNamespace    Op = "add_namespace"    // NQN, NSID (0 = lowest free), Name (volume)
	OpRemoveNamespace Op = "remove_namespace" // NQN, NSID
	OpAddHost         Op = "add_host"         // NQN, Host
	OpRemoveHost      Op = "remove_host"      // NQN, Host
	OpSetAllowAnyHost Op = "set_allow_any"    // NQN, Allow
	OpSetANAState     Op = "set_ana_state"    // NQN, NodeID, State (one of the ANA* states)

	// Replication (command version 2). The owner proposes the first
	// three, carrying the Epoch it believes in (ErrStaleEpoch when stale).
	OpSetReplicaState Op = "set_replica_state" // Name, NodeID (replica), State (Replica*), Message, Epoch, Rebuild (optional, → syncing)
	OpReportRebuild   Op = "report_rebuild"    // Name, NodeID (syncing replica), Rebuild, Epoch
	OpReportResync    Op = "report_resync"     // Name, Epoch, Rebuild (the owner's resync progress; nil: the resync ended)
	OpFailover        Op = "failover"          // Name, NodeID (new owner, in sync), Epoch (0 or the current one), State ("" planned, "faulted": fault the old owner's replica), Message
	OpAddReplica      Op = "add_replica"       // Name, Replica (Node, Path): joins syncing, full copy
	OpRemoveReplica   Op = "remove_replica"    // Name, NodeID; never the owner
)

// Command is one replicated change. It is encoded as JSON in the raft log.
type Command struct {
	V         int        `json:"v"`
	Op        Op         `json:"op"`
	Node      *Node      `json:"node,omitempty"`
	NodeID    string     `json:"node_id,omitempty"`
	Volume    *Volume    `json:"volume,omitempty"`
	Subsystem *Subsystem `json:"subsystem,omitempty"`
	Name      string     `json:"name,omitempty"`
	Size      int64      `json:"size,omitempty"`
	State     string     `json:"state,omitempty"`
	Message   string     `json:"message,omitempty"`
	NQN       string     `json:"nqn,omitempty"`
	NSID      uint32     `json:"nsid,omitempty"`
	Host      string     `json:"host,omitempty"`
	Allow     bool       `json:"allow,omitempty"`
	// Epoch is the ownership epoch the proposer believes in (replica
	// ops, failover).
	Epoch   uint64   `json:"epoch,omitempty"`
	Replica *Replica `json:"replica,omitempty"`
	Rebuild *Rebuild `json:"rebuild,omitempty"`
}

// Result is what a successfully applied command produced: the volume or
// subsystem as it now stands, and the NSID an AddNamespace chose.
type Result struct {
	Volume    *Volume    `json:"volume,omitempty"`
	Subsystem *Subsystem `json:"subsystem,omitempty"`
	Node      *Node      `json:"node,omitempty"`
	NSID      uint32     `json:"nsid,omitempty"`
}

// Version is the oldest command format that carries c: 2 when it uses
// replication (a replica op or failover, an ownership epoch, a create of
// more than one copy, a purge of one copy's file), else 1. Proposers set
// V to it.
func (c Command) Version() int {
	switch c.Op {
	case OpSetReplicaState, OpReportRebuild, OpReportResync, OpFailover, OpAddReplica, OpRemoveReplica:
		return 2
	case OpPurgeVolume:
		if c.NodeID != "" {
			return 2
		}
	}
	if c.Epoch != 0 || c.Replica != nil || c.Rebuild != nil {
		return 2
	}
	if v := c.Volume; v != nil && (v.Replicas > 1 || len(v.ReplicaSet) > 1 || v.Epoch > 1) {
		return 2
	}
	return 1
}

// Encode returns the log entry bytes of c, with V set to c.Version()
// when zero.
func (c Command) Encode() ([]byte, error) {
	if c.V == 0 {
		c.V = c.Version()
	}
	return json.Marshal(c)
}

// DecodeCommand parses a log entry. Versions outside MinCommandVersion to
// CommandVersion are ErrVersion; bad bytes are ErrInvalid.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return Command{}, fmt.Errorf("%w: command: %v", ErrInvalid, err)
	}
	if c.V < MinCommandVersion || c.V > CommandVersion {
		return Command{}, fmt.Errorf("%w: command version %d", ErrVersion, c.V)
	}
	return c, nil
}
