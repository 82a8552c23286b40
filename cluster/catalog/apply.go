package catalog

import (
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/rdmablk/rdmablk/nvme"
)

// MaxNSID is the largest NSID a subsystem may use (target.MaxNSID).
const MaxNSID = 1024

// MaxNameLength bounds volume names and node IDs.
const MaxNameLength = 64

// Apply validates c against s and, if it is allowed, applies it. It is
// deterministic (see the package doc). On error s is unchanged.
func (s *State) Apply(c Command) (Result, error) {
	if c.V < MinCommandVersion || c.V > CommandVersion {
		return Result{}, fmt.Errorf("%w: command version %d", ErrVersion, c.V)
	}
	switch c.Op {
	case OpSetReplicaState, OpReportRebuild, OpReportResync, OpFailover, OpAddReplica, OpRemoveReplica:
		if c.V < 2 {
			return Result{}, fmt.Errorf("%w: %s needs command version 2, got %d", ErrVersion, c.Op, c.V)
		}
	}
	switch c.Op {
	case OpRegisterNode:
		return s.registerNode(c)
	case OpRemoveNode:
		return s.removeNode(c)
	case OpCreateVolume:
		return s.createVolume(c)
	case OpResizeVolume:
		return s.resizeVolume(c)
	case OpDeleteVolume:
		return s.deleteVolume(c)
	case OpSetVolumeState:
		return s.setVolumeState(c)
	case OpPurgeVolume:
		return s.purgeVolume(c)
	case OpRepairVolume:
		return s.repairVolume(c)
	case OpCreateSubsystem:
		return s.createSubsystem(c)
	case OpDeleteSubsystem:
		return s.deleteSubsystem(c)
	case OpAddNamespace:
		return s.addNamespace(c)
	case OpRemoveNamespace:
		return s.removeNamespace(c)
	case OpAddHost, OpRemoveHost:
		return s.changeHost(c)
	case OpSetAllowAnyHost:
		return s.setAllowAny(c)
	case OpSetANAState:
		return s.setANA(c)
	case OpSetReplicaState:
		return s.setReplicaState(c)
	case OpReportRebuild:
		return s.reportRebuild(c)
	case OpReportResync:
		return s.reportResync(c)
	case OpFailover:
		return s.failover(c)
	case OpAddReplica:
		return s.addReplica(c)
	case OpRemoveReplica:
		return s.removeReplica(c)
	}
	return Result{}, fmt.Errorf("%w: unknown op %q", ErrInvalid, c.Op)
}

// ValidName reports whether n is a usable volume name or node ID: 1 to
// MaxNameLength bytes of [A-Za-z0-9._-], not starting with '.' or '-'.
func ValidName(n string) bool {
	if len(n) == 0 || len(n) > MaxNameLength || n[0] == '.' || n[0] == '-' {
		return false
	}
	for i := 0; i < len(n); i++ {
		ch := n[i]
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9', ch == '.', ch == '_', ch == '-':
		default:
			return false
		}
	}
	return true
}

func validID16(h string) bool {
	b, err := hex.DecodeString(h)
	return err == nil && len(b) == 16
}

func (s *State) registerNode(c Command) (Result, error) {
	n := c.Node
	if n == nil || !ValidName(n.ID) || n.APIAddr == "" || n.RaftAddr == "" {
		return Result{}, fmt.Errorf("%w: node needs a valid id (%s), api_addr and raft_addr", ErrInvalid, NamePattern)
	}
	nn := n.clone()
	nn.CNTLIDIndex = s.cntlidIndex(n.ID)
	s.Nodes[n.ID] = nn
	out := nn.clone()
	return Result{Node: &out}, nil
}

func (s *State) removeNode(c Command) (Result, error) {
	if _, ok := s.Nodes[c.NodeID]; !ok {
		return Result{}, fmt.Errorf("%w: node %q", ErrNotFound, c.NodeID)
	}
	for _, v := range s.Volumes {
		if v.Node == c.NodeID {
			return Result{}, fmt.Errorf("%w: node %q owns volume %q", ErrConflict, c.NodeID, v.Name)
		}
		if v.HasReplicaOn(c.NodeID) {
			return Result{}, fmt.Errorf("%w: node %q holds a replica of volume %q (remove it first)", ErrConflict, c.NodeID, v.Name)
		}
	}
	for _, sub := range s.Subsystems {
		if sub.Node == c.NodeID {
			return Result{}, fmt.Errorf("%w: node %q serves subsystem %q", ErrConflict, c.NodeID, sub.NQN)
		}
	}
	delete(s.Nodes, c.NodeID)
	return Result{}, nil
}

func (s *State) createVolume(c Command) (Result, error) {
	v := c.Volume
	if v == nil {
		return Result{}, fmt.Errorf("%w: no volume", ErrInvalid)
	}
	if err := v.validate(); err != nil {
		return Result{}, err
	}
	if old, ok := s.Volumes[v.Name]; ok {
		if old.State == VolumeDeleting {
			return Result{}, fmt.Errorf("%w: volume %q is still being deleted", ErrConflict, v.Name)
		}
		if v.RequestID != "" && old.RequestID == v.RequestID {
			return replayCreate(old, v)
		}
		return Result{}, fmt.Errorf("%w: volume %q", ErrExists, v.Name)
	}
	nv := v.materialize()
	if len(nv.ReplicaSet) != nv.Replicas {
		return Result{}, fmt.Errorf("%w: volume %q: %d replicas wanted, %d placed", ErrInvalid, v.Name, nv.Replicas, len(nv.ReplicaSet))
	}
	for i, r := range nv.ReplicaSet {
		if err := s.replicaFits(&nv, r); err != nil {
			return Result{}, err
		}
		// A new volume's copies are all zeroes: every one is in sync.
		nv.ReplicaSet[i].State, nv.ReplicaSet[i].Message, nv.ReplicaSet[i].Rebuild = ReplicaInSync, "", nil
	}
	if err := nv.checkReplicas(); err != nil {
		return Result{}, err
	}
	for _, o := range s.Volumes {
		if sameID(o.UUID, v.UUID) || sameID(o.NGUID, v.NGUID) || sameID(o.UUID, v.NGUID) || sameID(o.NGUID, v.UUID) {
			return Result{}, fmt.Errorf("%w: uuid or nguid of volume %q is volume %q's (hosts would merge them)", ErrConflict, v.Name, o.Name)
		}
	}
	nv.Epoch = 1
	nv.State, nv.Message = VolumeCreating, ""
	s.Volumes[nv.Name] = nv
	return Result{Volume: &nv}, nil
}

// replayCreate answers a retried create (same request ID) with what the
// first attempt answered: the volume as created (state creating, the
// requested size), not what it has become since, so that the retry is
// indistinguishable from the original success. A request ID reused for a
// different volume is a client bug: conflict.
func replayCreate(old Volume, v *Volume) (Result, error) {
	if old.Node != v.Node || old.BlockSize != v.BlockSize || old.Path != v.Path || v.Size > old.Size || old.DesiredReplicas() != v.DesiredReplicas() {
		return Result{}, fmt.Errorf("%w: request id %q was used to create volume %q with another spec", ErrConflict, v.RequestID, old.Name)
	}
	out := old.clone()
	out.Size, out.State, out.Message = v.Size, VolumeCreating, ""
	return Result{Volume: &out}, nil
}

func (s *State) liveVolume(name string) (Volume, error) {
	v, ok := s.Volumes[name]
	if !ok {
		return Volume{}, fmt.Errorf("%w: volume %q", ErrNotFound, name)
	}
	if v.State == VolumeDeleting {
		return Volume{}, fmt.Errorf("%w: volume %q is being deleted", ErrConflict, name)
	}
	return v, nil
}

func (s *State) resizeVolume(c Command) (Result, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	switch {
	case c.Size <= 0 || c.Size%int64(v.BlockSize) != 0:
		return Result{}, fmt.Errorf("%w: size %d: want a positive multiple of the block size %d", ErrInvalid, c.Size, v.BlockSize)
	case c.Size < v.Size:
		return Result{}, fmt.Errorf("%w: volume %q: shrinking %d → %d is not supported", ErrConflict, v.Name, v.Size, c.Size)
	}
	v.Size = c.Size
	s.Volumes[v.Name] = v
	return Result{Volume: &v}, nil
}

func (s *State) deleteVolume(c Command) (Result, error) {
	v, ok := s.Volumes[c.Name]
	if !ok {
		return Result{}, fmt.Errorf("%w: volume %q", ErrNotFound, c.Name)
	}
	if v.State == VolumeDeleting {
		return Result{Volume: &v}, nil // idempotent
	}
	if nqn, nsid, ok := s.exporter(v.Name); ok {
		return Result{}, fmt.Errorf("%w: volume %q is namespace %d of %s", ErrConflict, v.Name, nsid, nqn)
	}
	v.State, v.Message = VolumeDeleting, ""
	s.Volumes[v.Name] = v
	return Result{Volume: &v}, nil
}

func (s *State) setVolumeState(c Command) (Result, error) {
	if c.State != VolumeOnline && c.State != VolumeError {
		return Result{}, fmt.Errorf("%w: volume state %q", ErrInvalid, c.State)
	}
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	if c.Epoch != 0 && c.Epoch != v.OwnerEpoch() {
		return Result{}, fmt.Errorf("%w: volume %q state from the owner of epoch %d, the volume is at epoch %d (owner %s)", ErrStaleEpoch, c.Name, c.Epoch, v.OwnerEpoch(), v.Node)
	}
	v.State, v.Message = c.State, c.Message
	if c.State == VolumeOnline {
		v.Message = ""
	}
	s.Volumes[v.Name] = v
	return Result{Volume: &v}, nil
}

func (s *State) repairVolume(c Command) (Result, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	if v.State == VolumeOnline {
		return Result{}, fmt.Errorf("%w: volume %q is online: nothing to repair", ErrConflict, v.Name)
	}
	v.State, v.Message = VolumeCreating, ""
	s.Volumes[v.Name] = v
	return Result{Volume: &v}, nil
}

func (s *State) purgeVolume(c Command) (Result, error) {
	v, ok := s.Volumes[c.Name]
	if !ok {
		return Result{}, nil // already purged: idempotent
	}
	if v.State != VolumeDeleting {
		return Result{}, fmt.Errorf("%w: volume %q is not deleted", ErrConflict, c.Name)
	}
	if c.NodeID != "" {
		// One replica node removed its file; the name is forgotten when
		// the last one has.
		rs := v.ReplicaList()
		i := slices.IndexFunc(rs, func(r Replica) bool { return r.Node == c.NodeID })
		if i < 0 {
			return Result{}, nil // already purged there: idempotent
		}
		if len(rs) > 1 {
			v.ReplicaSet = slices.Delete(rs, i, i+1)
			s.Volumes[v.Name] = v
			return Result{}, nil
		}
	}
	delete(s.Volumes, c.Name)
	return Result{}, nil
}

func validSerial(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *State) createSubsystem(c Command) (Result, error) {
	sub := c.Subsystem
	if sub == nil {
		return Result{}, fmt.Errorf("%w: no subsystem", ErrInvalid)
	}
	if !nvme.ValidNQN(sub.NQN) || sub.NQN == nvme.DiscoveryNQN {
		return Result{}, fmt.Errorf("%w: subsystem NQN %q: want nqn.yyyy-mm.reverse-domain:name or nqn.2014-08.org.nvmexpress:uuid:<uuid>, at most 223 bytes, not the discovery NQN (NVMe Base 2.0 §4.5)", ErrInvalid, sub.NQN)
	}
	if !validSerial(sub.Serial, 20) || !validSerial(sub.Model, 40) {
		return Result{}, fmt.Errorf("%w: serial (≤ 20) or model (≤ 40) not printable ASCII", ErrInvalid)
	}
	for _, h := range sub.Hosts {
		if !nvme.ValidNQN(h) {
			return Result{}, fmt.Errorf("%w: host NQN %q", ErrInvalid, h)
		}
	}
	if _, ok := s.Nodes[sub.Node]; !ok {
		return Result{}, fmt.Errorf("%w: node %q", ErrNotFound, sub.Node)
	}
	if old, ok := s.Subsystems[sub.NQN]; ok {
		if sub.RequestID != "" && old.RequestID == sub.RequestID && old.Node == sub.Node {
			// A retry of the create that made it: the same answer as then.
			out := Subsystem{NQN: sub.NQN, Node: sub.Node, Serial: sub.Serial, Model: sub.Model,
				AllowAnyHost: sub.AllowAnyHost, Namespaces: map[uint32]string{}, RequestID: sub.RequestID}
			out.Hosts = slices.Compact(slices.Sorted(slices.Values(sub.Hosts)))
			if out.Hosts == nil {
				out.Hosts = []string{}
			}
			return Result{Subsystem: &out}, nil
		}
		return Result{}, fmt.Errorf("%w: subsystem %q", ErrExists, sub.NQN)
	}
	ns := Subsystem{
		NQN: sub.NQN, Node: sub.Node, Serial: sub.Serial, Model: sub.Model,
		AllowAnyHost: sub.AllowAnyHost, Namespaces: map[uint32]string{}, RequestID: sub.RequestID,
	}
	ns.Hosts = append([]string{}, sub.Hosts...)
	slices.Sort(ns.Hosts)
	ns.Hosts = slices.Compact(ns.Hosts)
	s.Subsystems[ns.NQN] = ns
	out := ns.clone()
	return Result{Subsystem: &out}, nil
}

func (s *State) subsystem(nqn string) (Subsystem, error) {
	sub, ok := s.Subsystems[nqn]
	if !ok {
		return Subsystem{}, fmt.Errorf("%w: subsystem %q", ErrNotFound, nqn)
	}
	return sub, nil
}

func (s *State) deleteSubsystem(c Command) (Result, error) {
	if _, err := s.subsystem(c.NQN); err != nil {
		return Result{}, err
	}
	delete(s.Subsystems, c.NQN)
	return Result{}, nil
}

func (s *State) addNamespace(c Command) (Result, error) {
	sub, err := s.subsystem(c.NQN)
	if err != nil {
		return Result{}, err
	}
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	if v.Node != sub.Node {
		return Result{}, fmt.Errorf("%w: volume %q is on node %q, subsystem %q on %q", ErrConflict, v.Name, v.Node, sub.NQN, sub.Node)
	}
	if nqn, nsid, ok := s.exporter(v.Name); ok {
		if nqn == sub.NQN && (c.NSID == 0 || c.NSID == nsid) {
			out := sub.clone() // a retry of the add that made it: same answer
			return Result{Subsystem: &out, NSID: nsid}, nil
		}
		return Result{}, fmt.Errorf("%w: volume %q is already namespace %d of %s", ErrConflict, v.Name, nsid, nqn)
	}
	nsid := c.NSID
	if nsid == 0 {
		for id := uint32(1); id <= MaxNSID; id++ {
			if _, used := sub.Namespaces[id]; !used {
				nsid = id
				break
			}
		}
		if nsid == 0 {
			return Result{}, fmt.Errorf("%w: subsystem %q has no free NSID", ErrConflict, sub.NQN)
		}
	}
	if nsid > MaxNSID {
		return Result{}, fmt.Errorf("%w: nsid %d: want 1..%d", ErrInvalid, nsid, MaxNSID)
	}
	if _, used := sub.Namespaces[nsid]; used {
		return Result{}, fmt.Errorf("%w: nsid %d in %s", ErrExists, nsid, sub.NQN)
	}
	sub = sub.clone()
	sub.Namespaces[nsid] = v.Name
	setReplicaANA(&sub, v)
	s.Subsystems[sub.NQN] = sub
	out := sub.clone()
	return Result{Subsystem: &out, NSID: nsid}, nil
}

func (s *State) removeNamespace(c Command) (Result, error) {
	sub, err := s.subsystem(c.NQN)
	if err != nil {
		return Result{}, err
	}
	if _, ok := sub.Namespaces[c.NSID]; !ok {
		return Result{}, fmt.Errorf("%w: nsid %d in %s", ErrNotFound, c.NSID, c.NQN)
	}
	sub = sub.clone()
	delete(sub.Namespaces, c.NSID)
	s.Subsystems[sub.NQN] = sub
	out := sub.clone()
	return Result{Subsystem: &out}, nil
}

func (s *State) changeHost(c Command) (Result, error) {
	sub, err := s.subsystem(c.NQN)
	if err != nil {
		return Result{}, err
	}
	if !nvme.ValidNQN(c.Host) {
		return Result{}, fmt.Errorf("%w: host NQN %q", ErrInvalid, c.Host)
	}
	i, found := slices.BinarySearch(sub.Hosts, c.Host)
	sub = sub.clone()
	if c.Op == OpAddHost {
		if found {
			return Result{}, fmt.Errorf("%w: host %q in %s", ErrExists, c.Host, c.NQN)
		}
		sub.Hosts = slices.Insert(sub.Hosts, i, c.Host)
	} else {
		if !found {
			return Result{}, fmt.Errorf("%w: host %q in %s", ErrNotFound, c.Host, c.NQN)
		}
		sub.Hosts = slices.Delete(sub.Hosts, i, i+1)
	}
	s.Subsystems[sub.NQN] = sub
	out := sub.clone()
	return Result{Subsystem: &out}, nil
}

func (s *State) setAllowAny(c Command) (Result, error) {
	sub, err := s.subsystem(c.NQN)
	if err != nil {
		return Result{}, err
	}
	sub = sub.clone()
	sub.AllowAnyHost = c.Allow
	s.Subsystems[sub.NQN] = sub
	out := sub.clone()
	return Result{Subsystem: &out}, nil
}

func (s *State) setANA(c Command) (Result, error) {
	sub, err := s.subsystem(c.NQN)
	if err != nil {
		return Result{}, err
	}
	switch c.State {
	case ANAOptimized, ANANonOptimized, ANAInaccessible, ANAPersistentLoss, ANAChange:
	default:
		return Result{}, fmt.Errorf("%w: ANA state %q", ErrInvalid, c.State)
	}
	if _, ok := s.Nodes[c.NodeID]; !ok {
		return Result{}, fmt.Errorf("%w: node %q", ErrNotFound, c.NodeID)
	}
	if c.State == ANAOptimized || c.State == ANANonOptimized {
		for _, name := range sub.Namespaces {
			if v := s.Volumes[name]; len(v.ReplicaList()) > 1 && v.Node != c.NodeID {
				return Result{}, fmt.Errorf("%w: subsystem %s exports replicated volume %q, which only its owner %s serves (move it with a failover)", ErrConflict, sub.NQN, name, v.Node)
			}
		}
	}
	sub = sub.clone()
	if sub.ANA == nil {
		sub.ANA = map[string]string{}
	}
	sub.ANA[c.NodeID] = c.State
	s.Subsystems[sub.NQN] = sub
	out := sub.clone()
	return Result{Subsystem: &out}, nil
}
