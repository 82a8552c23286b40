package reconcile

import (
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/target"
)

// localPath is the file name of v's copy on node (the owner's is
// v.Path for single-copy volumes).
func localPath(v catalog.Volume, node string) string {
	if rep, ok := v.Replica(node); ok {
		return rep.Path
	}
	return v.Path
}

// hasCopy reports whether this pass found a copy of vol on this node.
func (r *Reconciler) hasCopy(vol string) bool { return r.here[vol] }

// noMeter keeps the owner's replication I/O out of the volume's metrics
// on replica nodes (the owner meters the host's I/O).
type noMeter struct{}

func (noMeter) MeterIO(target.IOSample) {}

// fenceReplicas is the data-path fence, the first step of every pass:
// every replica subsystem this node serves that admits a host other than
// the current owner at the current epoch (or that should not exist any
// more: the volume moved here, was deleted, or the copy removed) is
// removed from the target, which tears down the deposed owner's
// controllers and waits for the commands they had started on the copy
// (target.RemoveSubsystem). Only then does the pass go on (and, on a new
// owner, build the mirror), so from the moment this node acts on a
// failover no write of the old owner reaches its copy.
func (r *Reconciler) fenceReplicas(d desired) error {
	var errs []error
	for nqn, rs := range r.rsubs {
		v, ok := d.vols[rs.vol]
		if ok && r.roleOf(v) == roleReplica && catalog.OwnerHostNQN(v.Node, v.OwnerEpoch()) == rs.host {
			continue
		}
		if err := r.o.Target.RemoveSubsystem(nqn); err != nil && !errors.Is(err, target.ErrNoSubsystem) {
			errs = append(errs, fmt.Errorf("fence replica subsystem %s: %w", nqn, err))
			continue
		}
		delete(r.rsubs, nqn)
		r.log.Info("replica subsystem fenced: the owner's controllers dropped", "nqn", nqn, "host", rs.host)
	}
	return errors.Join(errs...)
}

// ensureReplicaSubsystem serves this node's copy of v (role replica) in
// catalog.ReplicaNQN(v), namespace 1, admitting only the owner at its
// epoch (catalog.OwnerHostNQN).
func (r *Reconciler) ensureReplicaSubsystem(v catalog.Volume) error {
	nqn := catalog.ReplicaNQN(v.Name)
	host := catalog.OwnerHostNQN(v.Node, v.OwnerEpoch())
	if _, ok := r.rsubs[nqn]; ok {
		return nil // fenceReplicas removed it if its host was stale
	}
	ov := r.vols[v.Name]
	if ov == nil {
		return fmt.Errorf("replica of volume %s is not open", v.Name)
	}
	if _, ok := r.o.Target.Subsystem(nqn); ok {
		return fmt.Errorf("replica subsystem %s: already in the target and not managed by the cluster", nqn)
	}
	ts, err := r.o.Target.AddSubsystem(target.SubsystemConfig{NQN: nqn, Model: "rdmablk replica", Hosts: []string{host}})
	if err != nil {
		return fmt.Errorf("add replica subsystem %s: %w", nqn, err)
	}
	if err := ts.AddNamespace(target.NamespaceConfig{NSID: 1, Backend: ov.vb, Meter: noMeter{}}); err != nil {
		r.o.Target.RemoveSubsystem(nqn)
		return fmt.Errorf("replica subsystem %s: add namespace: %w", nqn, err)
	}
	r.rsubs[nqn] = replicaSub{host: host, vol: v.Name}
	r.log.Info("serving replica", "volume", v.Name, "nqn", nqn, "owner_host", host)
	return nil
}

// removeReplicaSubsystem removes the replica subsystem this reconciler
// serves volume name's copy in, if it does (a deposed owner then reaches
// this copy no more).
func (r *Reconciler) removeReplicaSubsystem(name string) error {
	nqn := catalog.ReplicaNQN(name)
	if _, ok := r.rsubs[nqn]; !ok {
		return nil
	}
	delete(r.rsubs, nqn)
	if err := r.o.Target.RemoveSubsystem(nqn); err != nil && !errors.Is(err, target.ErrNoSubsystem) {
		return err
	}
	return nil
}

// teardown takes a volume's stack out of service because this node's
// role or the ownership epoch changed and it could not be rebuilt under
// its namespaces (restack.go): a volume attached nowhere, or one whose
// new stack failed to open. Every namespace serving it turns
// inaccessible, is detached (RemoveNamespace waits for its commands) and
// the stack is closed. A later step or pass opens it anew.
func (r *Reconciler) teardown(name string, ov *openVol) error {
	var errs []error
	if err := r.removeReplicaSubsystem(name); err != nil {
		errs = append(errs, err)
	}
	r.inaccessible(name)
	for k, vol := range r.ns {
		if vol != name {
			continue
		}
		if ts, ok := r.o.Target.Subsystem(k.nqn); ok {
			if err := ts.RemoveNamespace(k.nsid); err != nil && !errors.Is(err, target.ErrNoNamespace) {
				errs = append(errs, fmt.Errorf("volume %s: detach from %s: %w", name, k.nqn, err))
				continue
			}
		}
		r.unrecordNS(k, vol)
	}
	if len(errs) > 0 {
		return errors.Join(errs...) // still attached somewhere: retried next pass
	}
	r.closeRetired(name, ov)
	if r.vols[name] == ov {
		delete(r.vols, name)
	}
	r.log.Info("volume stack taken down for a new role or epoch", "volume", name, "was", ov.role, "epoch", ov.epoch)
	return nil
}

// closeVol closes a volume's stack: rebuilds stopped, then the handle
// (which closes the mirror with its legs, or the file).
func (r *Reconciler) closeVol(ov *openVol) error {
	if ov.own != nil {
		r.stopOwner(ov.own)
	}
	err := ov.vb.Close()
	if own := ov.own; own != nil {
		if err == nil && own.copiesIdentical() {
			r.identical[own.name] = own.epoch
		} else {
			delete(r.identical, own.name)
		}
	}
	return err
}
