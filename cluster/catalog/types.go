package catalog

// Volume states.
const (
	// VolumeCreating: in the catalogue; the owner has not yet reported
	// its backing file open.
	VolumeCreating = "creating"
	// VolumeOnline: the owner opened the backing file at the current size.
	VolumeOnline = "online"
	// VolumeError: the owner failed to open or grow the backing file
	// (Volume.Message says why); it retries on its next reconciliation.
	VolumeError = "error"
	// VolumeDeleting: a tombstone. The owner removes the backing file and
	// proposes PurgeVolume.
	VolumeDeleting = "deleting"
)

// ANA states of a subsystem on a node (NVMe Base 2.0 §8.20.3).
const (
	ANAOptimized      = "optimized"
	ANANonOptimized   = "non-optimized"
	ANAInaccessible   = "inaccessible"
	ANAPersistentLoss = "persistent-loss"
	ANAChange         = "change"
)

// Node is a cluster member as the catalogue knows it.
type Node struct {
	// ID is the raft server ID, unique in the cluster.
	ID string `json:"id"`
	// APIAddr is host:port of the node's control API.
	APIAddr string `json:"api_addr"`
	// RaftAddr is the advertised raft transport address.
	RaftAddr string `json:"raft_addr"`
	// Listeners are the node's NVMe-oF data listeners.
	Listeners []Listener `json:"listeners,omitempty"`
	// VolumeFSBytes is the size of the filesystem that holds the node's
	// volume directory (0 = unknown): a volume larger than it can never
	// be written in full, so creating one is refused.
	VolumeFSBytes int64 `json:"volume_fs_bytes,omitempty"`
	// CNTLIDIndex picks the node's range of NVMe controller IDs
	// (CNTLIDRange), 1 to MaxCNTLIDNodes; 0: none. Apply assigns it when
	// the node is first registered (the lowest index no other node
	// holds) and keeps it when the node registers again; a value carried
	// in a command is ignored.
	CNTLIDIndex int `json:"cntlid_index,omitempty"`
}

// Listener is one NVMe-oF port of a node, as its discovery log entries
// describe it (NVMe-oF 1.1 §5.3, Figure 38).
type Listener struct {
	PortID  uint16 `json:"port_id"`
	TrType  uint8  `json:"trtype"`
	AdrFam  uint8  `json:"adrfam"`
	TrAddr  string `json:"traddr"`
	TrSvcID string `json:"trsvcid"`
	// TSAS is the listener's transport specific address subtype for
	// discovery entries, as its transport set it (target.Port.TSAS), in
	// hex without trailing zero bytes; empty for listeners recorded
	// before it was kept.
	TSAS string `json:"tsas,omitempty"`
}

// Volume is a block volume: a sparse backing file on its owner node and,
// when replicated, one on each replica node.
type Volume struct {
	Name string `json:"name"`
	// UUID and NGUID identify the namespace that exports the volume
	// (Identify Namespace, CNS 03h descriptors); 32 hex digits each.
	UUID  string `json:"uuid"`
	NGUID string `json:"nguid"`
	// Size is the capacity in bytes, a multiple of BlockSize.
	Size      int64 `json:"size"`
	BlockSize int   `json:"block_size"`
	// Path is the backing file's name in the owner's volume directory
	// (ValidVolumePath: name + ".img", chosen by the leader, never by a
	// client). Unique per node.
	Path string `json:"path"`
	// Node is the owner's ID: it holds an in-sync replica, serves the
	// volume ANA-optimized and is the only node that writes it (mirroring
	// to the other replicas). It changes only by OpFailover.
	Node string `json:"node"`
	// Replicas is the desired number of copies, 1 to MaxReplicas; 0 in
	// entries written before replication means 1 (DesiredReplicas).
	Replicas int `json:"replicas,omitempty"`
	// ReplicaSet lists the copies, the owner's among them, on distinct
	// nodes. Entries written before replication have none: their one
	// replica is Node's Path, in sync (ReplicaList).
	ReplicaSet []Replica `json:"replica_set,omitempty"`
	// Epoch is the ownership epoch, the fencing token: it starts at 1 and
	// every change of owner increments it (0 in entries written before
	// epochs means 1: OwnerEpoch). A command an owner proposes about its
	// volume's replicas carries the epoch it believes in, and Apply
	// rejects it with ErrStaleEpoch unless that is the current one.
	Epoch uint64 `json:"epoch,omitempty"`
	// Resync is the progress of the owner's resync (resync.go), as it
	// last reported it with OpReportResync: after an unclean hand-off the
	// owner copies its whole copy to the other in-sync copies, which
	// until then may differ from it in blocks of writes that were never
	// acknowledged. Copied and Total count bytes written to copies (each
	// region once per copy resynced); Full is always set. Nil: no resync
	// runs. OpFailover clears it (the new owner starts its own), and the
	// owner clears it when the resync ends.
	Resync *Rebuild `json:"resync,omitempty"`
	// State is one of the Volume* states; Message explains VolumeError.
	State   string `json:"state"`
	Message string `json:"message,omitempty"`
	// RequestID is the client's ID of the create request (see
	// VolumeSpec.RequestID).
	RequestID string `json:"request_id,omitempty"`
}

// Subsystem is an NVM subsystem, served by one node.
type Subsystem struct {
	NQN    string `json:"nqn"`
	Node   string `json:"node"`
	Serial string `json:"serial,omitempty"`
	Model  string `json:"model,omitempty"`
	// AllowAnyHost admits every host; otherwise only Hosts.
	AllowAnyHost bool     `json:"allow_any_host"`
	Hosts        []string `json:"hosts"`
	// Namespaces maps NSID to volume name.
	Namespaces map[uint32]string `json:"namespaces"`
	// ANA maps node ID to the ANA state of this subsystem's group there.
	ANA map[string]string `json:"ana,omitempty"`
	// RequestID is the client's ID of the create request: a retried
	// create with the same ID answers this subsystem instead of "exists".
	RequestID string `json:"request_id,omitempty"`
}

// allowed reports whether host may connect to s.
func (s *Subsystem) allowed(host string) bool {
	if s.AllowAnyHost {
		return true
	}
	for _, h := range s.Hosts {
		if h == host {
			return true
		}
	}
	return false
}

// Allowed reports whether host may connect to s.
func (s *Subsystem) Allowed(host string) bool { return s.allowed(host) }

func (n Node) clone() Node {
	n.Listeners = append([]Listener(nil), n.Listeners...)
	return n
}

// Clone returns a deep copy.
func (s Subsystem) Clone() Subsystem { return s.clone() }

func (s Subsystem) clone() Subsystem {
	s.Hosts = append([]string{}, s.Hosts...)
	ns := make(map[uint32]string, len(s.Namespaces))
	for k, v := range s.Namespaces {
		ns[k] = v
	}
	s.Namespaces = ns
	if s.ANA != nil {
		a := make(map[string]string, len(s.ANA))
		for k, v := range s.ANA {
			a[k] = v
		}
		s.ANA = a
	}
	return s
}
