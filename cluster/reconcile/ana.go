package reconcile

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// anaStates maps the catalogue's ANA state names to NVMe ANA states.
var anaStates = map[string]uint8{
	catalog.ANAOptimized:      nvme.ANAStateOptimized,
	catalog.ANANonOptimized:   nvme.ANAStateNonOptimized,
	catalog.ANAInaccessible:   nvme.ANAStateInaccessible,
	catalog.ANAPersistentLoss: nvme.ANAStatePersistentLoss,
	catalog.ANAChange:         nvme.ANAStateChange,
}

// anaStateOf is the NVMe ANA state the catalogue gives subsystem s on
// node: its ANA entry for the node, optimized when there is none.
func anaStateOf(s catalog.Subsystem, node string) (uint8, error) {
	name, ok := s.ANA[node]
	if !ok || name == "" {
		return nvme.ANAStateOptimized, nil
	}
	st, ok := anaStates[name]
	if !ok {
		return 0, fmt.Errorf("subsystem %s: unknown ANA state %q for node %s", s.NQN, name, node)
	}
	return st, nil
}

// anaFor is the ANA state this node serves subsystem s with: the
// catalogue's (anaStateOf), except inaccessible while this node owns one
// of its replicated volumes at an epoch the cluster has refused (the
// mirror's fault record met catalog.ErrStaleEpoch): a deposed owner stops
// serving before its catalogue even learns of the failover.
func (r *Reconciler) anaFor(s catalog.Subsystem) (uint8, error) {
	st, err := anaStateOf(s, r.o.NodeID)
	if err != nil {
		return 0, err
	}
	for _, vol := range s.Namespaces {
		if ov := r.vols[vol]; ov != nil && ov.own != nil && ov.own.memb.fenced.Load() {
			return nvme.ANAStateInaccessible, nil
		}
	}
	return st, nil
}

// ensureANA sets the ANA state of ts's namespaces (all in the default ANA
// group: the catalogue keeps one state per subsystem and node) on every
// port of this node's target to the catalogue's state for this node. The
// target ignores a state it already has, so a pass that changes nothing
// raises no ANA Change notice; a change reaches every controller
// connected through the node's ports.
func (r *Reconciler) ensureANA(s catalog.Subsystem, ts *target.Subsystem) error {
	st, err := r.anaFor(s)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range r.o.Target.Ports() {
		if ts.ANAState(p.ID, target.DefaultANAGroup) == st {
			continue
		}
		if err := ts.SetANAState(p.ID, target.DefaultANAGroup, st); err != nil && !errors.Is(err, target.ErrNoPort) {
			errs = append(errs, fmt.Errorf("subsystem %s: ANA state on port %d: %w", s.NQN, p.ID, err))
			continue
		}
		r.log.Info("ANA state set", "nqn", s.NQN, "port", p.ID, "state", st)
	}
	return errors.Join(errs...)
}
