package reconcile

import (
	"context"
	"errors"
	"log/slog"
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
// limited like a rebuild. Its progress goes to the catalogue like a
// rebuild's (OpReportResync, fenced by ov's epoch): once at the start,
// then every catalog.RebuildReportInterval, and a clearing report when
// the resync ends (done or failed; endResync retries it). A resync
// stopped because the stack is torn down proposes nothing: a failover
// already cleared the record, and a restarted owner's new resync
// replaces it. stopOwner cancels it and waits. A copy that fails during
// the resync is recorded faulted by the mirror with every region dirty,
// so the usual rebuild copies it whole; a resync stopped by the local
// copy failing is not retried (the volume is down).
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
		report := func(rb *catalog.Rebuild) {
			pctx, pcancel := context.WithTimeout(ctx, faultTimeout)
			defer pcancel()
			if _, err := r.o.Proposer.Propose(pctx, catalog.Command{Op: catalog.OpReportResync, Name: ov.name,
				Rebuild: rb, Epoch: ov.epoch}); err != nil && ctx.Err() == nil {
				log.Debug("resync progress not reported", "err", err)
			}
		}
		progress := func() *catalog.Rebuild {
			p := ov.m.ResyncProgress()
			if p.Started.IsZero() { // Resync has not counted yet: what it will copy
				for _, ls := range ov.m.Legs() {
					if !ls.Local && ls.State == mirror.InSync {
						p.Total += int64(ov.m.Blocks()) * int64(ov.m.BlockSize())
					}
				}
			}
			return &catalog.Rebuild{Full: true, Copied: min(p.Done, p.Total), Total: p.Total, Rate: int64(p.Rate), Updated: time.Now()}
		}
		report(progress())
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
				if ctx.Err() == nil {
					r.endResync(ctx, ov, log) // ended on its own: done, or failed
				}
				return
			case <-t.C:
				p := ov.m.ResyncProgress()
				log.Info("resync progress", "bytes", p.Done, "of", p.Total, "bytes_per_second", int64(p.Rate), "eta", p.ETA.Round(time.Second))
				report(progress())
			}
		}
	}()
}

// endResync clears ov's resync record (OpReportResync without progress),
// retrying while the outcome is not final (no leader, say): a record left
// behind would show a resync that no longer runs until the next failover.
// It gives up when ctx ends (the stack is torn down), when the catalogue
// answers with a verdict (a stale epoch: a failover cleared it; the
// volume is gone or being deleted; a leader of an older version that
// knows no such op), or after endResyncTries attempts (about half a
// minute; logged).
func (r *Reconciler) endResync(ctx context.Context, ov *ownerVol, log *slog.Logger) {
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		pctx, cancel := context.WithTimeout(ctx, faultTimeout)
		_, err := r.o.Proposer.Propose(pctx, catalog.Command{Op: catalog.OpReportResync, Name: ov.name, Epoch: ov.epoch})
		cancel()
		if err == nil || ctx.Err() != nil || errors.Is(err, catalog.ErrStaleEpoch) || errors.Is(err, catalog.ErrNotFound) ||
			errors.Is(err, catalog.ErrConflict) || errors.Is(err, catalog.ErrInvalid) || errors.Is(err, catalog.ErrVersion) {
			return
		}
		if try == endResyncTries {
			log.Warn("end of resync not recorded; volume status shows it until the next resync or failover", "err", err)
			return
		}
		log.Debug("end of resync not recorded yet; retrying", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, catalog.RebuildReportInterval)
	}
}

// endResyncTries bounds endResync's attempts.
const endResyncTries = 10
