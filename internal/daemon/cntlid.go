package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Controller IDs (target.Options.FirstCNTLID/LastCNTLID,
// Target.SetCNTLIDRange). Every node with a copy of a replicated volume
// serves the volume's export subsystem, and a Linux host connected to two
// of them refuses the second path if both gave it the same controller ID
// ("Duplicate cntlid"). So each cluster node hands out controller IDs
// from its own range, which the catalogue assigns when the node is first
// registered (catalog.Node.CNTLIDIndex, catalog.CNTLIDRange: 2047 IDs
// each, disjoint by construction); its subsystems wrap within it.
//
// The target is built before the cluster member starts (the member
// registers the target's ports), so the daemon starts with the range
// recorded by the previous run (cntlidFile in the cluster data
// directory), and watchCNTLIDRange applies the catalogue's range to the
// running target as soon as the node is registered, and records it. On a
// node's first start (no record) the target starts at an ID hashed from
// the node ID over the whole space until the watch sees the registration
// (moments after the member starts): a controller created in that window
// — normally none, since hosts learn of a new node's subsystems through
// the catalogue it is only joining — gets an ID from the hashed start. A node
// registered when catalog.MaxCNTLIDNodes others hold every range gets
// none and keeps the hashed start (warned): its IDs may collide with
// another node's with a small chance (for a node pair whose subsystems
// each hand out N IDs, about 2N/65,519: 1.5 % for N = 500), which costs
// the host that path, not data. A standalone daemon uses 1..0xFFEF.
//
// A range holds 2047 IDs; a subsystem with that many live controllers on
// one node refuses the next Fabrics Connect until one goes.

// cntlidFile is the name, in the cluster data directory, of the record
// of this node's controller-ID range index.
const cntlidFile = "cntlid-range.json"

// cntlidRecord is cntlidFile's content.
type cntlidRecord struct {
	Node  string `json:"node"`
	Index int    `json:"index"`
}

// cntlidChoice is the first controller ID the target uses and why.
type cntlidChoice struct {
	first uint16
	// index is the catalogue's range index it comes from (0: hashed, or
	// standalone).
	index int
}

// clusterDir is the cluster member's data directory.
func clusterDir(cfg *Config) string {
	if cfg.Cluster.DataDir != "" {
		return cfg.Cluster.DataDir
	}
	return filepath.Join(cfg.DataDir, "cluster")
}

// chooseFirstCNTLID picks the target's first controller ID: 1 standalone;
// in a cluster, the first of the range recorded in cntlidFile, else
// (first start, or an unreadable record: logged) one hashed from the
// node ID.
func chooseFirstCNTLID(cfg *Config, log *slog.Logger) cntlidChoice {
	if !cfg.Cluster.Enabled {
		return cntlidChoice{first: catalog.MinCNTLID}
	}
	id := cfg.Cluster.NodeID
	path := filepath.Join(clusterDir(cfg), cntlidFile)
	rec, err := readCNTLIDRecord(path)
	switch {
	case err == nil && rec.Node == id:
		if first, last, ok := catalog.CNTLIDRange(rec.Index); ok {
			log.Info("controller IDs: this node's range, assigned by the catalogue", "first", first, "last", last, "index", rec.Index)
			return cntlidChoice{first: first, index: rec.Index}
		}
		err = fmt.Errorf("range index %d: want 1 to %d", rec.Index, catalog.MaxCNTLIDNodes)
	case err == nil:
		err = fmt.Errorf("it is node %q's, this is node %q", rec.Node, id)
	}
	first := nodeFirstCNTLID(id)
	if errors.Is(err, fs.ErrNotExist) {
		log.Info("controller IDs: no range assigned to this node yet (first start): starting at an ID hashed from the node ID until the next start",
			"first", first)
	} else {
		log.Warn("controller IDs: the recorded range is not usable; starting at an ID hashed from the node ID until the next start",
			"file", path, "err", err, "first", first)
	}
	return cntlidChoice{first: first}
}

func readCNTLIDRecord(path string) (cntlidRecord, error) {
	var rec cntlidRecord
	b, err := os.ReadFile(path)
	if err != nil {
		return rec, err
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("%s: %w", path, err)
	}
	return rec, nil
}

// writeCNTLIDRecord replaces path with rec (written aside, synced, then
// renamed, so a crash leaves the old record or the new one).
func writeCNTLIDRecord(path string, rec cntlidRecord) error {
	b, _ := json.Marshal(rec)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// catalogueView is what the range watch reads of the cluster member
// (*cluster.Node).
type catalogueView interface {
	View(fn func(*catalog.State))
	Watch() (<-chan struct{}, func())
}

var _ catalogueView = (*cluster.Node)(nil)

// watchCNTLIDRange applies this node's range from the catalogue to the
// running target (apply: Target.SetCNTLIDRange) as soon as the node is
// registered and whenever its index changes, and records the index in
// cntlidFile for the next start; inUse is the choice this run started
// with. It runs on a goroutine of its own until the returned stop is
// called; stop takes a last look at the catalogue and returns when the
// goroutine has ended.
func watchCNTLIDRange(cat catalogueView, id, path string, inUse cntlidChoice, apply func(first, last uint16) error, log *slog.Logger) (stop func()) {
	ch, unwatch := cat.Watch()
	done := make(chan struct{})
	quit := make(chan struct{})
	recorded, applied := inUse.index, inUse.index
	warned, last := false, false
	go func() {
		defer close(done)
		defer unwatch()
		for {
			var n catalog.Node
			var ok bool
			cat.View(func(st *catalog.State) { n, ok = st.Nodes[id] })
			switch {
			case !ok:
			case n.CNTLIDIndex == 0 && !warned:
				warned = true
				log.Warn("controller IDs: the catalogue has no range for this node (it holds more than the nodes that get one); a host connected to two nodes serving one subsystem may refuse a path (\"Duplicate cntlid\")",
					"max_nodes", catalog.MaxCNTLIDNodes, "first", inUse.first)
			case n.CNTLIDIndex != 0 && n.CNTLIDIndex != applied:
				first, last, _ := n.CNTLIDRange()
				if err := apply(first, last); err != nil {
					log.Warn("controller IDs: the catalogue's range not applied", "first", first, "last", last, "err", err)
					break
				}
				applied = n.CNTLIDIndex
				if applied != inUse.index {
					log.Info("controller IDs: new controllers get IDs from this node's range, assigned by the catalogue",
						"first", first, "last", last, "index", applied, "started_at", inUse.first)
				}
			}
			if applied != 0 && applied != recorded {
				if err := writeCNTLIDRecord(path, cntlidRecord{Node: id, Index: applied}); err != nil {
					log.Warn("controller IDs: range not recorded for the next start", "file", path, "err", err)
				} else {
					recorded = applied
				}
			}
			if last {
				return
			}
			select {
			case <-quit:
				last = true // one more look: the record is current when stop returns
			case <-ch:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

// nodeFirstCNTLID is the start of a cluster node that has no range yet:
// a point in 1..0xFFEF derived from the node ID (see above for what it
// risks).
func nodeFirstCNTLID(nodeID string) uint16 {
	h := fnv.New32a()
	h.Write([]byte(nodeID))
	return uint16(1 + h.Sum32()%catalog.MaxCNTLID)
}
