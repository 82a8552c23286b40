package reconcile

import (
	"errors"

	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/target"
)

// A volume's stack is rebuilt when this node's role for it changes
// (replica ↔ owner on a failover, single ↔ owner when copies are added
// or removed), when the ownership epoch moves, or when an owner's volume
// grows. While the volume is attached to export namespaces here, the
// rebuild happens under them, never by detaching them: a host with
// multipath keeps the namespace on every path (the kernel drops a
// multipath device whose last path lost it), and sees no Namespace
// Attribute Changed event.
//
//  1. retire: the old stack leaves r.vols; a replica subsystem over it
//     is removed (RemoveSubsystem drains the owner's commands), and
//     unless the path serves before and after (keepsServing) every
//     export subsystem holding the volume turns inaccessible on every
//     port of this node, before anything else changes.
//  2. The new stack is opened (ensureVolume): the copy opened afresh, and
//     for an owner the mirror built over it (waiting a bounded time for
//     the copies, confirming the epoch with the leader).
//  3. swapStack: each export namespace gets the new stack's handle
//     through target.Subsystem.ReplaceNamespaceBackend (same NSID, UUID,
//     NGUID; the commands already on the old backend finish first), then
//     the old stack is closed (a mirror flushes and closes its legs).
//  4. The pass's ensureANA then sets the catalogue's state: an owner
//     path turns optimized only now, over the mirror.
//
// If the new stack cannot be opened, the old one is taken down as before
// (teardown: detached, closed) and the next pass builds afresh.

// keepsServing reports whether the export paths of a volume whose stack
// ov is rebuilt for role keep serving through the rebuild: this node
// serves the volume before (single, or owner not fenced) and after
// (single or owner) at the same epoch — a copy added or removed, or an
// owner's resize. Any other change (a failover either way, an epoch
// moved on) turns the paths inaccessible first.
func keepsServing(ov *openVol, role string, v catalog.Volume) bool {
	serves := func(role string) bool { return role == roleSingle || role == roleOwner }
	if !serves(ov.role) || !serves(role) || ov.epoch != v.OwnerEpoch() {
		return false
	}
	return ov.own == nil || !ov.own.memb.fenced.Load()
}

// attached reports whether volume name backs an export namespace this
// reconciler attached.
func (r *Reconciler) attached(name string) bool {
	for _, vol := range r.ns {
		if vol == name {
			return true
		}
	}
	return false
}

// retire takes ov, the stack of volume name, out of r.vols for a rebuild
// under its namespaces (step 1 above). The namespaces stay attached to
// it until swapStack or teardown.
func (r *Reconciler) retire(name string, ov *openVol, keep bool) error {
	var errs []error
	if err := r.removeReplicaSubsystem(name); err != nil {
		errs = append(errs, err)
	}
	if !keep {
		r.inaccessible(name)
	}
	delete(r.vols, name)
	r.log.Info("volume stack to be rebuilt under its namespaces", "volume", name, "was", ov.role, "epoch", ov.epoch,
		"serving_through", keep)
	return errors.Join(errs...)
}

// inaccessible sets the ANA state of every export subsystem holding
// volume name to inaccessible on every port of this node. The pass's
// ensureANA sets the catalogue's state again.
func (r *Reconciler) inaccessible(name string) {
	for k, vol := range r.ns {
		if vol != name {
			continue
		}
		if ts, ok := r.o.Target.Subsystem(k.nqn); ok {
			for _, p := range r.o.Target.Ports() {
				if ts.ANAState(p.ID, target.DefaultANAGroup) != nvme.ANAStateInaccessible {
					ts.SetANAState(p.ID, target.DefaultANAGroup, nvme.ANAStateInaccessible)
				}
			}
		}
	}
}

// swapStack puts nv, the new stack of volume name, under every export
// namespace old backs (step 3 above) and closes old. A namespace whose
// backend cannot be replaced (gone from the target, or refused) is
// detached instead (logged); the pass attaches it again over nv. It
// returns once the target no longer uses old.
func (r *Reconciler) swapStack(name string, old, nv *openVol) {
	for k, vol := range r.ns {
		if vol != name {
			continue
		}
		ts, ok := r.o.Target.Subsystem(k.nqn)
		if !ok {
			r.unrecordNS(k, vol)
			continue
		}
		err := ts.ReplaceNamespaceBackend(k.nsid, nv.vb)
		if err == nil {
			continue
		}
		r.log.Warn("namespace backend not swapped; detaching the namespace, the pass attaches it again",
			"volume", name, "nqn", k.nqn, "nsid", k.nsid, "err", err)
		ts.RemoveNamespace(k.nsid) // fails only for a namespace already gone
		r.unrecordNS(k, vol)
	}
	r.closeRetired(name, old)
	r.log.Info("volume stack rebuilt under its namespaces", "volume", name, "was", old.role, "epoch", old.epoch,
		"now", nv.role, "new_epoch", nv.epoch)
}

// closeRetired closes a stack the target no longer uses; a deposed
// owner's mirror whose copies fenced it is expected to fail its final
// flushes (logged at info).
func (r *Reconciler) closeRetired(name string, ov *openVol) {
	err := r.closeVol(ov)
	switch {
	case err == nil:
	case ov.own != nil && ov.own.memb.deposed.Load() && errors.Is(err, mirror.ErrFenced):
		r.log.Info("deposed owner's mirror closed; copies that fenced it refused its final flush", "volume", name, "err", err)
	default:
		r.log.Warn("closing volume", "volume", name, "err", err)
	}
}
