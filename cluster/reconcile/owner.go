package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// ownerVol is the owner's data path of a replicated volume: a mirror over
// the local copy and one leg per other copy, built for one ownership
// epoch. Its fields other than m and the atomics are guarded by the
// Reconciler's mutex (the pass); rebuild goroutines touch only m, the
// Proposer and their own ownedLeg's atomics.
type ownerVol struct {
	name  string
	self  string
	epoch uint64
	m     *mirror.Mirror
	memb  *membership
	legs  map[string]*ownedLeg // node → leg
	wg    sync.WaitGroup       // rebuild and resync goroutines
	// resyncCancel stops the resync (resync.go); resyncDone is closed
	// when it has ended. Both nil when none was started.
	resyncCancel context.CancelFunc
	resyncDone   chan struct{}
}

// ownedLeg is the owner's record of one remote copy.
type ownedLeg struct {
	// dead: the mirror holds a deadLeg for it (the copy was unreachable).
	dead bool
	// reopen: a rebuild over this connection failed; the next attempt
	// connects afresh (the copy's node may have restarted, elsewhere).
	reopen bool
	// rebuilding is set while a rebuild goroutine runs; cancel stops it.
	rebuilding atomic.Bool
	cancel     context.CancelFunc
	// Backoff between attempts to bring a faulted copy back.
	notBefore time.Time
	backoff   time.Duration
	retry     atomic.Bool // set by a failed rebuild: back off before the next attempt
}

func (l *ownedLeg) failed(now time.Time) {
	l.backoff = min(max(2*l.backoff, legRetryMin), legRetryMax)
	l.notBefore = now.Add(l.backoff)
}

// membership records the mirror's faults in the catalogue
// (mirror.Membership): OpSetReplicaState faulted with the owner's epoch,
// through raft. ErrStaleEpoch means this node was deposed: the volume
// is fenced (its export turns inaccessible on the next pass, which Fault
// asks for at once).
type membership struct {
	r      *Reconciler
	vol    string
	self   string
	epoch  uint64
	fenced atomic.Bool
	// deposed is set by the pass that tears the stack down because the
	// volume's epoch moved on: Fault then fails at once (ErrStaleEpoch)
	// without a proposal — the legs' failed final flushes at Close are
	// the fence at work, and the copies are the new owner's to judge.
	deposed atomic.Bool
	// shutdown is set by Reconciler.Close (the daemon stops, raft is
	// already stopped): Fault fails at once rather than wait for a
	// proposal that cannot commit; the mirror's Close then reports the
	// copy whose final flush failed, and the next owner's resync makes
	// the copies identical again.
	shutdown atomic.Bool
}

// Fault implements mirror.Membership. It runs on a mirror goroutine and
// blocks for at most faultTimeout (plus the proposer's own bound).
func (mb *membership) Fault(leg string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), faultTimeout)
	defer cancel()
	msg := fmt.Sprint(cause)
	if mb.deposed.Load() && leg != mb.self {
		return fmt.Errorf("%w: volume %s: epoch %d was replaced; replica %s is the new owner's to judge", catalog.ErrStaleEpoch, mb.vol, mb.epoch, leg)
	}
	if mb.shutdown.Load() {
		return fmt.Errorf("volume %s: this node is shutting down; the fault of %s is not recorded", mb.vol, leg)
	}
	if leg == mb.self {
		// The local copy failed: the volume stops (the mirror fails every
		// I/O); report it, fenced by the epoch.
		mb.r.log.Error("local copy of replicated volume failed; volume stopped", "volume", mb.vol, "err", msg)
		_, err := mb.r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpSetVolumeState, Name: mb.vol,
			State: catalog.VolumeError, Message: "local copy failed: " + msg, Epoch: mb.epoch})
		return err
	}
	_, err := mb.r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpSetReplicaState, Name: mb.vol,
		NodeID: leg, State: catalog.ReplicaFaulted, Message: msg, Epoch: mb.epoch})
	switch {
	case err == nil:
		mb.r.log.Warn("replica faulted", "volume", mb.vol, "replica", leg, "epoch", mb.epoch, "cause", msg)
	case errors.Is(err, catalog.ErrStaleEpoch):
		mb.fenced.Store(true)
		mb.r.log.Error("replica fault refused: this node no longer owns the volume; it stops serving it",
			"volume", mb.vol, "replica", leg, "epoch", mb.epoch, "err", err)
		mb.r.Kick()
	default:
		mb.r.log.Error("replica fault not recorded; writes that need it fail", "volume", mb.vol, "replica", leg, "err", err)
	}
	return err
}

// mirrorState maps a catalogue replica state to the mirror's.
func mirrorState(s string) mirror.State {
	switch s {
	case catalog.ReplicaInSync:
		return mirror.InSync
	case catalog.ReplicaSyncing:
		return mirror.Syncing
	}
	return mirror.Faulted
}

// errFaultedCopy is the deadLeg error of a copy that was faulted in the
// catalogue when the owner's stack was built (buildOwner does not open it).
var errFaultedCopy = errors.New("copy faulted in the catalogue: reconnected once the owner serves")

// buildOwner opens the owner's stack of replicated volume v over local
// (the local copy, which it then owns, and closes on error): the mirror with a leg per other
// copy, each opened before it returns (waiting up to legOpenWait for
// copies the catalogue counts, so that a fresh owner does not fault a
// copy whose node has not yet applied the failover). A copy the
// catalogue calls faulted gets a deadLeg at once and the next pass
// (Kick) reconnects it: the failover does not wait for the lost owner.
func (r *Reconciler) buildOwner(ctx context.Context, v catalog.Volume, local blockdev.Backend, nodes map[string]catalog.Node) (*ownerVol, error) {
	if r.o.OpenLeg == nil {
		local.Close()
		return nil, fmt.Errorf("volume %s has %d copies but this node has no replication transport (no LegOpener)", v.Name, len(v.ReplicaList()))
	}
	ov := &ownerVol{name: v.Name, self: r.o.NodeID, epoch: v.OwnerEpoch(), legs: map[string]*ownedLeg{}}
	ov.memb = &membership{r: r, vol: v.Name, self: r.o.NodeID, epoch: ov.epoch}
	m, err := mirror.New(mirror.Config{LocalName: r.o.NodeID, Local: local, Membership: ov.memb})
	if err != nil {
		local.Close()
		return nil, err
	}
	ov.m = m
	type opened struct {
		node string
		b    blockdev.Backend
		err  error
	}
	var remote []catalog.Replica
	for _, rep := range v.ReplicaList() {
		if rep.Node != r.o.NodeID {
			remote = append(remote, rep)
		}
	}
	res := make(chan opened, len(remote))
	skipped := false
	for _, rep := range remote {
		if rep.State == catalog.ReplicaFaulted {
			// Not opened here: the catalogue serves without it, and its
			// node is often the owner just lost, which would hold the
			// failover (and the hosts' I/O) for openLeg's whole timeout.
			// ensureLegs reconnects it from the next pass on.
			res <- opened{node: rep.Node, err: errFaultedCopy}
			skipped = true
			continue
		}
		go func() {
			b, err := r.openLeg(ctx, v, rep.Node, ov.epoch, nodes, true)
			res <- opened{rep.Node, b, err}
		}()
	}
	if skipped {
		defer r.Kick()
	}
	got := map[string]opened{}
	for range remote {
		o := <-res
		got[o.node] = o
	}
	for _, rep := range remote {
		o := got[rep.Node]
		l := &ownedLeg{}
		b := o.b
		if o.err != nil {
			l.dead = true
			b = &deadLeg{bs: local.BlockSize(), blocks: local.Blocks(), err: o.err}
			if o.err != errFaultedCopy {
				r.log.Warn("replica unreachable; serving without it until it returns", "volume", v.Name, "replica", rep.Node, "err", o.err)
			}
		}
		if err := m.AddLeg(rep.Node, b, mirrorState(rep.State)); err != nil {
			b.Close()
			r.stopOwner(ov)
			m.Close()
			return nil, fmt.Errorf("volume %s: leg %s: %w", v.Name, rep.Node, err)
		}
		ov.legs[rep.Node] = l
	}
	r.confirmOwner(ctx, ov)
	r.log.Info("replicated volume serving as owner", "volume", v.Name, "epoch", ov.epoch, "copies", len(remote)+1)
	return ov, nil
}

// resyncIfNeeded starts the resync of ov, a new owner stack of v
// (resync.go), unless v needs none or this process closed a stack at
// ov's epoch with the copies identical. The caller has closed the stack
// ov replaces, if any.
func (r *Reconciler) resyncIfNeeded(v catalog.Volume, ov *ownerVol) {
	if needsResync(v, r.o.NodeID) && r.identical[v.Name] != ov.epoch {
		r.startResync(ov)
	}
	delete(r.identical, v.Name)
}

// confirmOwner asks the leader, before ov serves, whether this node still
// owns the volume at ov's epoch: it proposes the volume online with that
// epoch. A node that restarted runs its first passes on the catalogue it
// had, which may predate a failover away from it; its copies then refuse
// it and its writes are fenced, but its reads would come from its own
// outdated copy. The leader refuses the record (ErrStaleEpoch) and the
// volume is fenced here: its export is inaccessible until the catalogue
// catches up and the stack is rebuilt as a replica. Other errors (no
// leader yet) leave it serving, as before.
func (r *Reconciler) confirmOwner(ctx context.Context, ov *ownerVol) {
	ctx, cancel := context.WithTimeout(ctx, faultTimeout)
	defer cancel()
	_, err := r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpSetVolumeState, Name: ov.name,
		State: catalog.VolumeOnline, Epoch: ov.epoch})
	switch {
	case errors.Is(err, catalog.ErrStaleEpoch):
		ov.memb.fenced.Store(true)
		r.log.Error("not the owner any more: this node's catalogue is behind; the volume is not served until it catches up",
			"volume", ov.name, "epoch", ov.epoch, "err", err)
		r.Kick()
	case err != nil:
		r.log.Warn("ownership not confirmed by the leader; serving", "volume", ov.name, "epoch", ov.epoch, "err", err)
	}
}

// openLeg opens the copy of v on node through Options.OpenLeg. With wait
// it retries (connection refused, wrong geometry while the copy's node
// grows it) until legOpenWait passes; otherwise it tries once.
func (r *Reconciler) openLeg(ctx context.Context, v catalog.Volume, node string, epoch uint64, nodes map[string]catalog.Node, wait bool) (blockdev.Backend, error) {
	n, ok := nodes[node]
	if !ok {
		return nil, fmt.Errorf("node %s is not in the catalogue", node)
	}
	t := LegTarget{Node: node, Addrs: n.Listeners, SubNQN: catalog.ReplicaNQN(v.Name), NSID: 1,
		HostNQN: catalog.OwnerHostNQN(r.o.NodeID, epoch), Volume: v.Name, Size: v.Size, BlockSize: v.BlockSize}
	d := 2 * time.Second
	if wait {
		d = r.legWait
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	delay := 50 * time.Millisecond
	for {
		b, err := r.o.OpenLeg(ctx, t)
		if err == nil {
			if b.BlockSize() == v.BlockSize && int64(b.Blocks())*int64(v.BlockSize) == v.Size {
				return b, nil
			}
			err = fmt.Errorf("copy on %s has %d blocks of %d bytes, want %d bytes of %d", node, b.Blocks(), b.BlockSize(), v.Size, v.BlockSize)
			b.Close()
		}
		if !wait {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(delay):
		}
		if r.deposed(v.Name, epoch) {
			// No copy will admit this node at epoch any more: serve (for
			// the moment the next pass needs to take it down) without it.
			return nil, fmt.Errorf("%w (no longer the owner at epoch %d in the catalogue)", err, epoch)
		}
		delay = min(2*delay, time.Second)
	}
}

// deposed reports whether the catalogue no longer has this node own
// volume name at epoch: a failover committed while a new owner waited for
// its copies, or a restarted node's first pass ran on a catalogue that
// raft had not yet brought up to date (it would wait legOpenWait for
// copies that fence it, and serve nothing meanwhile, not even its copy as
// a replica for the real owner to rebuild).
func (r *Reconciler) deposed(name string, epoch uint64) bool {
	gone := false
	r.o.Catalog.View(func(st *catalog.State) {
		v, ok := st.Volumes[name]
		gone = !ok || v.Node != r.o.NodeID || v.OwnerEpoch() != epoch
	})
	return gone
}

// ensureLegs brings the owner's mirror to the catalogue's copies and
// states: adds new copies, drops removed ones, reconnects and rebuilds
// faulted ones (with backoff), starts rebuilds of syncing ones and marks
// rebuilt ones in sync once the catalogue has.
func (r *Reconciler) ensureLegs(ctx context.Context, ov *ownerVol, v catalog.Volume, nodes map[string]catalog.Node) error {
	now := time.Now()
	var errs []error
	want := map[string]catalog.Replica{}
	for _, rep := range v.ReplicaList() {
		if rep.Node != r.o.NodeID {
			want[rep.Node] = rep
		}
	}
	cur := map[string]mirror.State{}
	for _, ls := range ov.m.Legs() {
		if !ls.Local {
			cur[ls.Name] = ls.State
		}
	}
	// Copies that went away.
	for node, l := range ov.legs {
		if _, ok := want[node]; ok {
			continue
		}
		r.stopRebuild(ov, l)
		if b, err := ov.m.RemoveLeg(node); err == nil {
			b.Close()
		}
		delete(ov.legs, node)
		r.log.Info("replica removed from the mirror", "volume", v.Name, "replica", node)
	}
	for node, rep := range want {
		l := ov.legs[node]
		if l == nil {
			// A copy added while serving: it joins syncing (or faulted);
			// never in sync, since writes ran without it.
			st := mirrorState(rep.State)
			if st == mirror.InSync {
				errs = append(errs, fmt.Errorf("volume %s: copy on %s is in sync in the catalogue but not in the mirror", v.Name, node))
				continue
			}
			l = &ownedLeg{}
			b, err := r.openLeg(ctx, v, node, ov.epoch, nodes, false)
			if err != nil {
				l.dead = true
				l.failed(now)
				b = &deadLeg{bs: v.BlockSize, blocks: ov.m.Blocks(), err: err}
				st = mirror.Faulted
			}
			if err := ov.m.AddLeg(node, b, st); err != nil {
				b.Close()
				errs = append(errs, fmt.Errorf("volume %s: add leg %s: %w", v.Name, node, err))
				continue
			}
			ov.legs[node] = l
			cur[node] = st
		}
		if l.retry.Swap(false) {
			l.failed(now)
			l.reopen = true
		}
		ms := cur[node]
		switch rep.State {
		case catalog.ReplicaFaulted:
			if ms != mirror.Faulted {
				ov.m.SetState(node, mirror.Faulted)
			}
			if now.Before(l.notBefore) || l.rebuilding.Load() {
				continue
			}
			// A fresh connection loses the dirty-region record (it lives
			// with the leg): then the whole copy is rebuilt.
			full := l.dead || l.reopen
			if l.dead || l.reopen {
				b, err := r.openLeg(ctx, v, node, ov.epoch, nodes, false)
				if err != nil {
					l.failed(now)
					r.log.Debug("faulted replica still unreachable", "volume", v.Name, "replica", node, "err", err)
					continue
				}
				if old, err := ov.m.RemoveLeg(node); err == nil {
					old.Close()
				}
				if err := ov.m.AddLeg(node, b, mirror.Faulted); err != nil {
					b.Close()
					l.failed(now)
					errs = append(errs, fmt.Errorf("volume %s: re-add leg %s: %w", v.Name, node, err))
					continue
				}
				l.dead, l.reopen = false, false
			}
			var dirty int64
			for _, ls := range ov.m.Legs() {
				if ls.Name == node {
					dirty = ls.DirtyBytes
				}
			}
			_, err := r.o.Proposer.Propose(ctx, catalog.Command{Op: catalog.OpSetReplicaState, Name: v.Name, NodeID: node,
				State: catalog.ReplicaSyncing, Epoch: ov.epoch, Rebuild: &catalog.Rebuild{Full: full, Total: dirty}})
			if err != nil {
				l.failed(now)
				errs = append(errs, fmt.Errorf("volume %s: replica %s to syncing: %w", v.Name, node, err))
			}
		case catalog.ReplicaSyncing:
			if ms == mirror.Faulted {
				if now.Before(l.notBefore) || l.rebuilding.Load() {
					continue
				}
				if err := ov.m.SetState(node, mirror.Syncing); err != nil {
					errs = append(errs, fmt.Errorf("volume %s: leg %s to syncing: %w", v.Name, node, err))
					continue
				}
			}
			if !l.rebuilding.Load() && !now.Before(l.notBefore) {
				r.startRebuild(ov, l, node, rep.Rebuild != nil && rep.Rebuild.Full)
			}
		case catalog.ReplicaInSync:
			if ms == mirror.Syncing && !l.rebuilding.Load() {
				if err := ov.m.SetState(node, mirror.InSync); err != nil {
					errs = append(errs, fmt.Errorf("volume %s: leg %s in sync: %w", v.Name, node, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// startRebuild runs the rebuild of leg node on its own goroutine: it
// copies the dirty regions (rate limited), reports progress every
// catalog.RebuildReportInterval at most, and on success proposes the
// copy in sync (the pass that sees the commit tells the mirror).
func (r *Reconciler) startRebuild(ov *ownerVol, l *ownedLeg, node string, full bool) {
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	l.rebuilding.Store(true)
	ov.wg.Add(1)
	log := r.log.With("volume", ov.name, "replica", node)
	go func() {
		defer ov.wg.Done()
		defer l.rebuilding.Store(false)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- ov.m.Rebuild(ctx, node, mirror.RebuildOptions{BytesPerSecond: r.o.RebuildBytesPerSecond})
		}()
		log.Info("rebuild started", "full", full, "bytes_per_second", r.o.RebuildBytesPerSecond)
		t := time.NewTicker(catalog.RebuildReportInterval)
		defer t.Stop()
		report := func(p mirror.Progress) *catalog.Rebuild {
			return &catalog.Rebuild{Full: full, Copied: min(p.Done, p.Total), Total: p.Total, Rate: int64(p.Rate), Updated: time.Now()}
		}
		for {
			select {
			case err := <-done:
				if err != nil {
					if ctx.Err() == nil {
						log.Warn("rebuild failed; will retry", "err", err)
						l.retry.Store(true)
						r.Kick()
					}
					return
				}
				p, _ := ov.m.Progress(node)
				pctx, pcancel := context.WithTimeout(ctx, faultTimeout)
				_, perr := r.o.Proposer.Propose(pctx, catalog.Command{Op: catalog.OpSetReplicaState, Name: ov.name, NodeID: node,
					State: catalog.ReplicaInSync, Epoch: ov.epoch})
				pcancel()
				if perr != nil {
					log.Warn("rebuild done but the copy could not be recorded in sync; will retry", "err", perr)
					l.retry.Store(true)
					r.Kick()
					return
				}
				log.Info("rebuild done; replica in sync", "bytes", p.Done, "seconds", p.Finished.Sub(p.Started).Seconds())
				return
			case <-t.C:
				p, err := ov.m.Progress(node)
				if err != nil || !p.Running {
					continue
				}
				pctx, pcancel := context.WithTimeout(ctx, faultTimeout)
				if _, err := r.o.Proposer.Propose(pctx, catalog.Command{Op: catalog.OpReportRebuild, Name: ov.name, NodeID: node,
					Rebuild: report(p), Epoch: ov.epoch}); err != nil && ctx.Err() == nil {
					log.Debug("rebuild progress not reported", "err", err)
				}
				pcancel()
			}
		}
	}()
}

func (r *Reconciler) stopRebuild(ov *ownerVol, l *ownedLeg) {
	if l.cancel != nil {
		l.cancel()
	}
}

// stopOwner stops ov's rebuilds and waits for them; closing the mirror
// (the volume handle's Close) then closes the local copy and the legs.
func (r *Reconciler) stopOwner(ov *ownerVol) {
	for _, l := range ov.legs {
		r.stopRebuild(ov, l)
	}
	if ov.resyncCancel != nil {
		ov.resyncCancel()
	}
	ov.wg.Wait()
}
