package catalog

import (
	"fmt"
	"slices"
)

// replicaFits checks that replica r of volume v can live where it says:
// its node is a member, the volume fits the node's volume filesystem, and
// no other volume's replica uses the same path on that node.
func (s *State) replicaFits(v *Volume, r Replica) error {
	n, ok := s.Nodes[r.Node]
	if !ok {
		return fmt.Errorf("%w: node %q", ErrNotFound, r.Node)
	}
	if n.VolumeFSBytes > 0 && v.Size > n.VolumeFSBytes {
		return fmt.Errorf("%w: size %d: node %s's volume filesystem holds only %d bytes", ErrInvalid, v.Size, n.ID, n.VolumeFSBytes)
	}
	if !ValidVolumePath(r.Path) {
		return fmt.Errorf("%w: volume %q: path %q: want a plain file name in the volume directory (%s, then %s)", ErrInvalid, v.Name, r.Path, NamePattern, VolumeFileSuffix)
	}
	for _, o := range s.Volumes {
		if o.Name == v.Name {
			continue
		}
		for _, or := range o.ReplicaList() {
			if or.Node == r.Node && or.Path == r.Path {
				return fmt.Errorf("%w: path %q on node %s is volume %q's", ErrConflict, r.Path, r.Node, o.Name)
			}
		}
	}
	return nil
}

// setReplicaANA makes sub's ANA map agree with replicated volume v's
// replicas: the owner optimized, every other replica node inaccessible,
// so that hosts never see two optimized paths. A volume with one replica
// leaves the map alone (the admin's OpSetANAState rules it).
func setReplicaANA(sub *Subsystem, v Volume) {
	rs := v.ReplicaList()
	if len(rs) < 2 {
		return
	}
	if sub.ANA == nil {
		sub.ANA = map[string]string{}
	}
	for _, r := range rs {
		sub.ANA[r.Node] = ANAInaccessible
	}
	sub.ANA[v.Node] = ANAOptimized
}

// ownerCommand checks the fencing token of a command an owner proposed
// about volume c.Name and returns the volume, materialized.
func (s *State) ownerCommand(c Command) (Volume, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Volume{}, err
	}
	if c.Epoch == 0 {
		return Volume{}, fmt.Errorf("%w: %s on volume %q carries no ownership epoch", ErrInvalid, c.Op, c.Name)
	}
	if c.Epoch != v.OwnerEpoch() {
		return Volume{}, fmt.Errorf("%w: %s on volume %q: epoch %d, the volume is at epoch %d (owner %s)", ErrStaleEpoch, c.Op, c.Name, c.Epoch, v.OwnerEpoch(), v.Node)
	}
	return v.materialize(), nil
}

// storeVolume checks v's replica invariants and stores it.
func (s *State) storeVolume(v Volume) (Result, error) {
	if err := v.checkReplicas(); err != nil {
		return Result{}, err
	}
	s.Volumes[v.Name] = v
	out := v.clone()
	return Result{Volume: &out}, nil
}

func (s *State) setReplicaState(c Command) (Result, error) {
	v, err := s.ownerCommand(c)
	if err != nil {
		return Result{}, err
	}
	i := v.replicaIndex(c.NodeID)
	if i < 0 {
		return Result{}, fmt.Errorf("%w: volume %q has no replica on node %q", ErrNotFound, v.Name, c.NodeID)
	}
	r := &v.ReplicaSet[i]
	from, to := r.State, c.State
	switch to {
	case ReplicaSyncing, ReplicaInSync, ReplicaFaulted:
	default:
		return Result{}, fmt.Errorf("%w: replica state %q: want %s, %s or %s", ErrInvalid, to, ReplicaSyncing, ReplicaInSync, ReplicaFaulted)
	}
	if from == to {
		out := v.clone() // a retry: the same answer, the first message kept
		return Result{Volume: &out}, nil
	}
	switch {
	case c.NodeID == v.Node:
		return Result{}, fmt.Errorf("%w: volume %q: the owner's own replica on %s cannot leave %s; fail the volume over to another in-sync replica first", ErrConflict, v.Name, v.Node, ReplicaInSync)
	case from == ReplicaInSync && len(v.InSyncNodes()) == 1:
		return Result{}, fmt.Errorf("%w: volume %q: the replica on %s is the last in sync", ErrConflict, v.Name, c.NodeID)
	case from == ReplicaFaulted && to == ReplicaInSync:
		return Result{}, fmt.Errorf("%w: volume %q: a faulted replica (%s) rejoins through %s (a rebuild), not directly", ErrConflict, v.Name, c.NodeID, ReplicaSyncing)
	case from == ReplicaInSync && to == ReplicaSyncing:
		return Result{}, fmt.Errorf("%w: volume %q: an in-sync replica (%s) that missed writes is %s first", ErrConflict, v.Name, c.NodeID, ReplicaFaulted)
	}
	r.State, r.Message, r.Rebuild = to, "", nil
	switch to {
	case ReplicaFaulted:
		r.Message = c.Message
	case ReplicaSyncing:
		if c.Rebuild != nil {
			rb := *c.Rebuild
			r.Rebuild = &rb
		}
	}
	return s.storeVolume(v)
}

func (s *State) reportRebuild(c Command) (Result, error) {
	v, err := s.ownerCommand(c)
	if err != nil {
		return Result{}, err
	}
	if c.Rebuild == nil {
		return Result{}, fmt.Errorf("%w: %s without progress", ErrInvalid, c.Op)
	}
	i := v.replicaIndex(c.NodeID)
	if i < 0 {
		return Result{}, fmt.Errorf("%w: volume %q has no replica on node %q", ErrNotFound, v.Name, c.NodeID)
	}
	if v.ReplicaSet[i].State != ReplicaSyncing {
		return Result{}, fmt.Errorf("%w: volume %q: the replica on %s is %s, not rebuilding", ErrConflict, v.Name, c.NodeID, v.ReplicaSet[i].State)
	}
	rb := *c.Rebuild
	v.ReplicaSet[i].Rebuild = &rb
	return s.storeVolume(v)
}

// reportResync records (c.Rebuild set) or clears (nil: the resync ended,
// done or given up) the owner's resync progress on volume c.Name.
func (s *State) reportResync(c Command) (Result, error) {
	v, err := s.ownerCommand(c)
	if err != nil {
		return Result{}, err
	}
	if c.Rebuild == nil {
		v.Resync = nil
		return s.storeVolume(v)
	}
	if len(v.InSyncNodes()) < 2 {
		return Result{}, fmt.Errorf("%w: volume %q: resync progress, but the owner %s holds the only in-sync copy", ErrConflict, v.Name, v.Node)
	}
	rs := *c.Rebuild
	rs.Full = true
	v.Resync = &rs
	return s.storeVolume(v)
}

// failover makes c.NodeID the owner of volume c.Name and of every other
// volume exported by the same subsystem (a subsystem's namespaces share
// one ANA state per node, so they move together), bumps each one's epoch
// and, in the same command, sets the subsystem's ANA states: the new
// owner optimized, every other node inaccessible.
func (s *State) failover(c Command) (Result, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	if !ValidName(c.NodeID) {
		return Result{}, fmt.Errorf("%w: failover of volume %q: new owner %q: want a node ID", ErrInvalid, c.Name, c.NodeID)
	}
	if c.State != "" && c.State != ReplicaFaulted {
		return Result{}, fmt.Errorf("%w: failover of volume %q: old owner's replica state %q: want empty (planned) or %s", ErrInvalid, c.Name, c.State, ReplicaFaulted)
	}
	if v.Node == c.NodeID {
		out := v.clone() // already there (a retry): the same answer
		return Result{Volume: &out}, nil
	}
	if c.Epoch != 0 && c.Epoch != v.OwnerEpoch() {
		return Result{}, fmt.Errorf("%w: failover of volume %q decided at epoch %d, the volume is at epoch %d (owner %s)", ErrStaleEpoch, c.Name, c.Epoch, v.OwnerEpoch(), v.Node)
	}
	group := []Volume{v}
	nqn, _, exported := s.exporter(v.Name)
	if exported {
		for _, name := range s.Subsystems[nqn].Namespaces {
			if name != v.Name {
				group = append(group, s.Volumes[name])
			}
		}
		slices.SortFunc(group[1:], func(a, b Volume) int { return compareStrings(a.Name, b.Name) })
	}
	moved := make([]Volume, 0, len(group))
	for _, g := range group {
		g = g.materialize()
		i := g.replicaIndex(c.NodeID)
		if i < 0 || g.ReplicaSet[i].State != ReplicaInSync {
			st := "no replica"
			if i >= 0 {
				st = "a " + g.ReplicaSet[i].State + " replica"
			}
			why := ""
			if g.Name != v.Name {
				why = fmt.Sprintf(" (volume %q shares subsystem %s with %q and moves with it)", g.Name, nqn, v.Name)
			}
			return Result{}, fmt.Errorf("%w: failover of volume %q to %s: node %s holds %s of volume %q; only an in-sync replica may become owner%s", ErrConflict, v.Name, c.NodeID, c.NodeID, st, g.Name, why)
		}
		old := g.Node
		if c.State == ReplicaFaulted {
			j := g.replicaIndex(old)
			g.ReplicaSet[j].State, g.ReplicaSet[j].Message, g.ReplicaSet[j].Rebuild = ReplicaFaulted, c.Message, nil
		}
		g.Node = c.NodeID
		g.Epoch++
		g.Resync = nil // the old owner's: the new one starts its own
		if err := g.checkReplicas(); err != nil {
			return Result{}, err
		}
		moved = append(moved, g)
	}
	var sub Subsystem
	if exported {
		sub = s.Subsystems[nqn].clone()
		oldOwner := sub.Node
		sub.Node = c.NodeID
		if sub.ANA == nil {
			sub.ANA = map[string]string{}
		}
		sub.ANA[oldOwner] = ANAInaccessible
		for _, g := range moved {
			setReplicaANA(&sub, g)
		}
		for n := range sub.ANA {
			if n != c.NodeID {
				sub.ANA[n] = ANAInaccessible
			}
		}
		sub.ANA[c.NodeID] = ANAOptimized
	}
	for _, g := range moved {
		s.Volumes[g.Name] = g
	}
	if exported {
		s.Subsystems[nqn] = sub
	}
	out := moved[0].clone()
	return Result{Volume: &out}, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (s *State) addReplica(c Command) (Result, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	if c.Replica == nil {
		return Result{}, fmt.Errorf("%w: %s without a replica", ErrInvalid, c.Op)
	}
	v = v.materialize()
	r := Replica{Node: c.Replica.Node, Path: c.Replica.Path, State: ReplicaSyncing,
		Rebuild: &Rebuild{Full: true, Total: v.Size}}
	if i := v.replicaIndex(r.Node); i >= 0 {
		if v.ReplicaSet[i].Path == r.Path {
			out := v.clone() // a retry of the add that made it: same answer
			return Result{Volume: &out}, nil
		}
		return Result{}, fmt.Errorf("%w: volume %q already has a replica on node %s", ErrExists, v.Name, r.Node)
	}
	if len(v.ReplicaSet) >= MaxReplicas {
		return Result{}, fmt.Errorf("%w: volume %q already has %d replicas, the most there can be", ErrConflict, v.Name, MaxReplicas)
	}
	if err := s.replicaFits(&v, r); err != nil {
		return Result{}, err
	}
	v.ReplicaSet = append(v.ReplicaSet, r)
	v.Replicas = max(v.Replicas, len(v.ReplicaSet))
	res, err := s.storeVolume(v)
	if err != nil {
		return res, err
	}
	if nqn, _, ok := s.exporter(v.Name); ok {
		sub := s.Subsystems[nqn].clone()
		setReplicaANA(&sub, v)
		s.Subsystems[nqn] = sub
	}
	return res, nil
}

func (s *State) removeReplica(c Command) (Result, error) {
	v, err := s.liveVolume(c.Name)
	if err != nil {
		return Result{}, err
	}
	v = v.materialize()
	i := v.replicaIndex(c.NodeID)
	switch {
	case i < 0:
		return Result{}, fmt.Errorf("%w: volume %q has no replica on node %q", ErrNotFound, v.Name, c.NodeID)
	case c.NodeID == v.Node:
		return Result{}, fmt.Errorf("%w: volume %q: node %s is the owner; fail the volume over to another in-sync replica first", ErrConflict, v.Name, c.NodeID)
	case v.ReplicaSet[i].State == ReplicaInSync && len(v.InSyncNodes()) == 1:
		return Result{}, fmt.Errorf("%w: volume %q: the replica on %s is the last in sync", ErrConflict, v.Name, c.NodeID)
	}
	v.ReplicaSet = slices.Delete(v.ReplicaSet, i, i+1)
	v.Replicas = max(1, min(v.Replicas, len(v.ReplicaSet)))
	res, err := s.storeVolume(v)
	if err != nil {
		return res, err
	}
	if nqn, _, ok := s.exporter(v.Name); ok {
		sub := s.Subsystems[nqn].clone()
		if !slices.Contains(s.SubsystemNodes(nqn), c.NodeID) {
			delete(sub.ANA, c.NodeID)
		}
		s.Subsystems[nqn] = sub
	}
	return res, nil
}
