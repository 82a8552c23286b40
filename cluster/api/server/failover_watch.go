package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// WatchOptions configure RunFailoverWatch.
type WatchOptions struct {
	// Interval is how often the leader probes the nodes (0 = 1 s).
	Interval time.Duration
	// Grace is how long an owner must stay unreachable before its
	// volumes fail over (0 = 3 s): longer than a busy node's hiccup,
	// short enough that hosts see I/O resume in seconds.
	Grace time.Duration
	// RefusedGrace replaces Grace for an owner whose every probe since it
	// went missing was refused by its host (0 = 1 s; at most Grace): the
	// host is up and no rdmablkd listens — killed or crashed, not slow
	// or cut off — so waiting out a hiccup only delays the hosts' I/O. A
	// probe that times out meanwhile (the host itself gone or
	// partitioned) puts the owner back under Grace. A daemon restarted
	// within RefusedGrace keeps its volumes; one restarted later finds
	// them moved, and its copies are rebuilt as after any failover.
	RefusedGrace time.Duration
	// Now is the clock (nil = time.Now); tests pass a fake one.
	Now func() time.Time
}

// failoverWatch is the leader's record of node reachability between
// passes. Owned by the RunFailoverWatch goroutine.
type failoverWatch struct {
	s         *Server
	o         WatchOptions
	downSince map[string]time.Time // unreachable since; absent = answered last probe
	// onlyRefused: every probe of the node since downSince was refused.
	onlyRefused map[string]bool
}

// RunFailoverWatch is the automatic failover policy. It runs until ctx
// ends; the daemon starts it once per node on its own goroutine. Every
// Interval, while this node is the raft leader, it asks every node for
// its health (Options.Live, by default /v1/health); an owner unreachable
// for Grace is lost, and for each of its volumes with an in-sync copy on
// a node that answered, the leader proposes OpFailover
// (catalog.FailoverCommands: the volume's epoch, the lost owner's copy
// faulted, the subsystem's ANA states in the same command). A follower
// only forgets what it saw, so a new leader starts its grace period
// afresh. It never blocks on the catalogue's lock while probing.
func (s *Server) RunFailoverWatch(ctx context.Context, o WatchOptions) {
	w := newFailoverWatch(s, o)
	t := time.NewTicker(w.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.pass(ctx)
	}
}

func newFailoverWatch(s *Server, o WatchOptions) *failoverWatch {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 3 * time.Second
	}
	if o.RefusedGrace <= 0 {
		o.RefusedGrace = time.Second
	}
	o.RefusedGrace = min(o.RefusedGrace, o.Grace)
	if o.Now == nil {
		o.Now = time.Now
	}
	return &failoverWatch{s: s, o: o, downSince: map[string]time.Time{}, onlyRefused: map[string]bool{}}
}

// pass runs one probe and proposes the failovers it calls for; it returns
// the commands that were applied (tests).
func (w *failoverWatch) pass(ctx context.Context) []catalog.Command {
	if !w.s.o.Node.IsLeader() {
		clear(w.downSince)
		clear(w.onlyRefused)
		return nil
	}
	reach := w.s.probeNodes(ctx)
	live := map[string]bool{}
	for id, r := range reach {
		if r == Live {
			live[id] = true
		}
	}
	now := w.o.Now()
	var known []string
	w.s.o.Node.View(func(st *catalog.State) {
		for id := range st.Nodes {
			known = append(known, id)
		}
	})
	lostSet := map[string]bool{}
	byRefusal := map[string]bool{}
	for _, id := range known {
		if live[id] {
			delete(w.downSince, id)
			delete(w.onlyRefused, id)
			continue
		}
		since, ok := w.downSince[id]
		if !ok {
			w.downSince[id] = now
			w.onlyRefused[id] = true
			since = now
		}
		if reach[id] != Refused {
			w.onlyRefused[id] = false
		}
		grace := w.o.Grace
		if w.onlyRefused[id] {
			grace = w.o.RefusedGrace
		}
		if now.Sub(since) >= grace {
			lostSet[id] = true
			byRefusal[id] = w.onlyRefused[id]
		}
	}
	for id := range w.downSince {
		if !contains(known, id) {
			delete(w.downSince, id)
			delete(w.onlyRefused, id)
		}
	}
	if len(lostSet) == 0 {
		return nil
	}
	var cmds []catalog.Command
	w.s.o.Node.View(func(st *catalog.State) {
		cmds = st.FailoverCommands(func(n string) bool { return lostSet[n] }, func(n string) bool { return live[n] },
			lostReason(lostSet, byRefusal, w.o))
	})
	var done []catalog.Command
	for _, c := range cmds {
		res, err := w.s.Propose(ctx, c)
		switch {
		case err == nil:
			w.s.o.Logger.Warn("volume failed over: its owner is unreachable", "volume", c.Name, "to", c.NodeID, "epoch", res.Volume.Epoch)
			done = append(done, c)
		case errors.Is(err, catalog.ErrStaleEpoch):
			// Someone moved it meanwhile; the next pass sees the new owner.
		default:
			w.s.o.Logger.Error("automatic failover failed", "volume", c.Name, "to", c.NodeID, "err", fmt.Sprint(err))
		}
	}
	return done
}

// lostReason is the failover record's message: for each lost owner, how
// long it was unreachable or its host refused connections.
func lostReason(lost, byRefusal map[string]bool, o WatchOptions) string {
	var parts []string
	for _, id := range sortedKeys(lost) {
		if byRefusal[id] {
			parts = append(parts, id+": its host refused connections for "+o.RefusedGrace.String()+" (no rdmablkd listening)")
		} else {
			parts = append(parts, id+": unreachable for "+o.Grace.String())
		}
	}
	return "owner lost (" + strings.Join(parts, "; ") + ")"
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
