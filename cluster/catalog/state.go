package catalog

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
)

// SnapshotVersion is the newest snapshot format this package writes and
// reads. Version 2 added replicas and ownership epochs; version 1
// snapshots still read (their volumes have one implicit replica and epoch
// 1), and a state without a replicated volume is written as version 1
// (the fields it adds then mean what their absence means), so that nodes
// from before replication can restore it.
const SnapshotVersion = 2

// MinSnapshotVersion is the oldest snapshot format ReadSnapshot reads.
const MinSnapshotVersion = 1

// State is the whole catalogue. The zero value is not usable; use New.
type State struct {
	Nodes      map[string]Node      `json:"nodes"`
	Volumes    map[string]Volume    `json:"volumes"`
	Subsystems map[string]Subsystem `json:"subsystems"`
	// Index is the raft index of the last command applied (set by the
	// applier; Apply does not touch it).
	Index uint64 `json:"index"`
}

// New returns an empty State.
func New() *State {
	return &State{
		Nodes:      map[string]Node{},
		Volumes:    map[string]Volume{},
		Subsystems: map[string]Subsystem{},
	}
}

// Clone returns a deep copy.
func (s *State) Clone() *State {
	c := &State{
		Nodes:      make(map[string]Node, len(s.Nodes)),
		Volumes:    make(map[string]Volume, len(s.Volumes)),
		Subsystems: make(map[string]Subsystem, len(s.Subsystems)),
		Index:      s.Index,
	}
	for k, v := range s.Nodes {
		c.Nodes[k] = v.clone()
	}
	for k, v := range s.Volumes {
		c.Volumes[k] = v.clone()
	}
	for k, v := range s.Subsystems {
		c.Subsystems[k] = v.clone()
	}
	return c
}

// NodeList returns the nodes sorted by ID.
func (s *State) NodeList() []Node {
	out := make([]Node, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		out = append(out, n.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// VolumeList returns the volumes (tombstones included) sorted by name.
func (s *State) VolumeList() []Volume {
	out := make([]Volume, 0, len(s.Volumes))
	for _, v := range s.Volumes {
		out = append(out, v.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// SubsystemList returns the subsystems sorted by NQN.
func (s *State) SubsystemList() []Subsystem {
	out := make([]Subsystem, 0, len(s.Subsystems))
	for _, v := range s.Subsystems {
		out = append(out, v.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NQN < out[j].NQN })
	return out
}

// exporter returns the subsystem and NSID that export volume name.
func (s *State) exporter(name string) (string, uint32, bool) {
	for nqn, sub := range s.Subsystems {
		for nsid, v := range sub.Namespaces {
			if v == name {
				return nqn, nsid, true
			}
		}
	}
	return "", 0, false
}

// SubsystemNodes returns the nodes that serve subsystem nqn, sorted: its
// Node, and every node that holds a replica of a volume it exports (those
// report the ANA state the subsystem's ANA map gives them: the owner
// optimized, the others inaccessible). Nil when there is no such
// subsystem.
func (s *State) SubsystemNodes(nqn string) []string {
	sub, ok := s.Subsystems[nqn]
	if !ok {
		return nil
	}
	out := []string{sub.Node}
	for _, name := range sub.Namespaces {
		v, ok := s.Volumes[name]
		if !ok {
			continue
		}
		for _, r := range v.ReplicaList() {
			out = append(out, r.Node)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Exporter returns the subsystem NQN and NSID that export volume name.
func (s *State) Exporter(name string) (nqn string, nsid uint32, ok bool) {
	return s.exporter(name)
}

type snapshot struct {
	V     int    `json:"v"`
	State *State `json:"state"`
}

// WriteSnapshot writes the whole state to w (JSON, versioned).
func (s *State) WriteSnapshot(w io.Writer) error {
	return json.NewEncoder(w).Encode(snapshot{V: s.snapshotVersion(), State: s})
}

// snapshotVersion is 2 when a volume has more than one copy or has
// changed owner, else 1.
func (s *State) snapshotVersion() int {
	for _, v := range s.Volumes {
		if len(v.ReplicaSet) > 1 || v.Epoch > 1 {
			return 2
		}
	}
	return 1
}

// ReadSnapshot reads a state written by WriteSnapshot.
func ReadSnapshot(r io.Reader) (*State, error) {
	var sn snapshot
	if err := json.NewDecoder(r).Decode(&sn); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrInvalid, err)
	}
	if sn.V < MinSnapshotVersion || sn.V > SnapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d", ErrVersion, sn.V)
	}
	if sn.State == nil {
		return nil, fmt.Errorf("%w: snapshot without state", ErrInvalid)
	}
	st := sn.State
	if st.Nodes == nil {
		st.Nodes = map[string]Node{}
	}
	if st.Volumes == nil {
		st.Volumes = map[string]Volume{}
	}
	if st.Subsystems == nil {
		st.Subsystems = map[string]Subsystem{}
	}
	for k, sub := range st.Subsystems {
		if sub.Namespaces == nil {
			sub.Namespaces = map[uint32]string{}
			st.Subsystems[k] = sub
		}
	}
	return st, nil
}
