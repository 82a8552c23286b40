package reconcile

import (
	"context"
	"time"

	"github.com/rdmablk/rdmablk/blockdev/mirror"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// needsResync reports whether a new owner stack of v must make the other
// in-sync copies identical to its own (mirror.Resync): when the volume
// was served before (it is not being created), so an earlier owner — the
// one that failed over, or this node before a crash or restart — may have
// had writes in flight that reached some copies only, and another copy
// is in sync. A planned failover (`volume failover --to`) does not
// quiesce the old owner before the catalogue moves the volume either (the
// old owner's in-flight writes fail on the fenced copies, possibly after
// reaching others), so it is treated the same way.
func needsResync(v catalog.Volume, self string) bool {
	if v.State == catalog.VolumeCreating {
		return false // never served: no write was ever in flight
	}
	for _, n := range v.InSyncNodes() {
		if n != self {
			return true
		}
	}
	return false
}

// copiesIdentical reports, once ov's mirror is closed and its goroutines
// stopped, whether its in-sync copies were left identical: a resync it
// needed finished without error (a copy that failed one is faulted, out
// of the in-sync set), and no write failed after reaching some copies
// only (mirror.MayDiverge). Then a stack rebuilt by this process at the
// same epoch (a resize) need not resync.
func (ov *ownerVol) copiesIdentical() bool {
	if ov.m.MayDiverge() {
		return false
	}
	if ov.resyncDone == nil {
		return true
	}
	p := ov.m.ResyncProgress()
	return !p.Finished.IsZero() && p.Err == nil
}

// startResync runs ov's mirror.Resync on a goroutine of its own, rate
// limited like a rebuild, and logs its progress every
// catalog.RebuildReportInterval (the catalogue records rebuild progress
// only for syncing copies; a resync's copies stay in sync). stopOwner
// cancels it and waits. A copy that fails during the resync is recorded
// faulted by the mirror with every region dirty, so the usual rebuild
// copies it whole; a resync stopped by the local copy failing is not
// retried (the volume is down).
func (r *Reconciler) startResync(ov *ownerVol) {
	ctx, cancel := context.WithCancel(context.Background())
	ov.resyncCancel = cancel
	ov.resyncDone = make(chan struct{})
	ov.wg.Add(1)
	log := r.log.With("volume", ov.name, "epoch", ov.epoch)
	go func() {
		defer ov.wg.Done()
		defer close(ov.resyncDone)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			done <- ov.m.Resync(ctx, mirror.RebuildOptions{BytesPerSecond: r.o.RebuildBytesPerSecond})
		}()
		log.Info("resync started: making the in-sync copies identical to this owner's after a failover or restart",
			"bytes_per_second", r.o.RebuildBytesPerSecond)
		t := time.NewTicker(catalog.RebuildReportInterval)
		defer t.Stop()
		for {
			select {
			case err := <-done:
				p := ov.m.ResyncProgress()
				switch {
				case err == nil:
					log.Info("resync done; copies identical", "bytes", p.Done, "seconds", p.Finished.Sub(p.Started).Seconds())
				case ctx.Err() != nil:
					log.Info("resync stopped", "bytes", p.Done, "of", p.Total)
				default:
					log.Warn("resync failed; failed copies are faulted and will be rebuilt whole", "err", err, "bytes", p.Done, "of", p.Total)
				}
				return
			case <-t.C:
				p := ov.m.ResyncProgress()
				log.Info("resync progress", "bytes", p.Done, "of", p.Total, "bytes_per_second", int64(p.Rate), "eta", p.ETA.Round(time.Second))
			}
		}
	}()
}
