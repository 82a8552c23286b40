package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// PickNewOwner chooses the node a volume fails over to when its owner is
// lost: an in-sync replica other than the owner on a node live says is
// up, the lowest node ID among them (deterministic, so two leaders in a
// row pick the same one). ok is false when there is none: the volume then
// stays with its owner (offline while the owner is) rather than move to a
// copy that may lack acknowledged writes.
//
// It is pure: the leader calls it with its view of liveness and proposes
// OpFailover with the volume's Epoch (so that a decision taken on a stale
// view is rejected, ErrStaleEpoch) and State ReplicaFaulted (the lost
// owner's copy stops counting as in sync).
func PickNewOwner(v Volume, live func(node string) bool) (node string, ok bool) {
	var cands []string
	for _, n := range v.InSyncNodes() {
		if n != v.Node && live(n) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return "", false
	}
	return slices.Min(cands), true
}

// FailoverCommands returns the failovers the leader should propose: one
// OpFailover for every live (not deleted) volume whose owner is lost and
// that has an in-sync replica on a live node (PickNewOwner over live);
// volumes that share a subsystem once (they move together). Each carries
// the volume's epoch (a decision on a stale view fails with
// ErrStaleEpoch) and faults the lost owner's copy. lost and live are
// separate so that an owner is given up only after a grace period while
// a target need only answer now. Sorted by volume name; pure.
func (s *State) FailoverCommands(lost, live func(node string) bool, reason string) []Command {
	var out []Command
	done := map[string]bool{}
	for _, v := range s.VolumeList() {
		if v.State == VolumeDeleting || !lost(v.Node) || done[v.Name] {
			continue
		}
		to, ok := PickNewOwner(v, live)
		if !ok {
			continue
		}
		if nqn, _, exp := s.exporter(v.Name); exp {
			for _, name := range s.Subsystems[nqn].Namespaces {
				done[name] = true
			}
		}
		out = append(out, Command{V: CommandVersion, Op: OpFailover, Name: v.Name, NodeID: to,
			Epoch: v.OwnerEpoch(), State: ReplicaFaulted, Message: reason})
	}
	return out
}

// PlaceReplicas chooses n nodes, other than owner, for the other copies
// of a new volume of size bytes: nodes that online says are up and whose
// volume filesystem can hold the volume (Node.VolumeFSBytes, as a
// single-node create checks), those holding the fewest replicas first,
// then by ID. Not enough such nodes is ErrConflict naming what was
// found. Pure: the leader calls it when it builds a create command.
func (s *State) PlaceReplicas(owner string, n int, size int64, online func(node string) bool) ([]string, error) {
	if n <= 0 {
		return nil, nil
	}
	load := map[string]int{}
	for _, v := range s.Volumes {
		for _, r := range v.ReplicaList() {
			load[r.Node]++
		}
	}
	var cands, skipped []string
	for _, node := range s.NodeList() {
		switch {
		case node.ID == owner:
		case !online(node.ID):
			skipped = append(skipped, node.ID+" (not reachable)")
		case node.VolumeFSBytes > 0 && size > node.VolumeFSBytes:
			skipped = append(skipped, fmt.Sprintf("%s (volume filesystem of %d bytes)", node.ID, node.VolumeFSBytes))
		default:
			cands = append(cands, node.ID)
		}
	}
	if len(cands) < n {
		why := ""
		if len(skipped) > 0 {
			why = "; not eligible: " + strings.Join(skipped, ", ")
		}
		return nil, fmt.Errorf("%w: %d replicas need %d nodes besides the owner %s, %d eligible%s", ErrConflict, n+1, n, owner, len(cands), why)
	}
	slices.SortStableFunc(cands, func(a, b string) int { return load[a] - load[b] })
	return cands[:n], nil
}
