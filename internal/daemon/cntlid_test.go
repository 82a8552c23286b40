package daemon

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/target"
)

// TestNodeFirstCNTLID: the fallback start of a node without a range (its
// first start) lies in 1..0xFFEF, the same ID always gives the same
// start, and the example cluster's node IDs start far apart.
func TestNodeFirstCNTLID(t *testing.T) {
	ids := []string{"n1", "n2", "n3"}
	var starts []int
	for _, id := range ids {
		s := nodeFirstCNTLID(id)
		if s < 1 || s > 0xFFEF || s != nodeFirstCNTLID(id) {
			t.Fatalf("%s: start %#x", id, s)
		}
		starts = append(starts, int(s))
	}
	for i := range starts {
		for j := i + 1; j < len(starts); j++ {
			if d := starts[i] - starts[j]; d > -256 && d < 256 {
				t.Errorf("%s and %s start %d IDs apart (%#x, %#x)", ids[i], ids[j], d, starts[i], starts[j])
			}
		}
	}
}

// TestChooseFirstCNTLID: standalone starts at 1; a cluster node starts at
// its recorded range, and without a usable record (none yet, another
// node's, a bad index, garbage) at its hashed start.
func TestChooseFirstCNTLID(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	cfg := &Config{DataDir: dir}
	if c := chooseFirstCNTLID(cfg, log); c.first != 1 || c.index != 0 {
		t.Fatalf("standalone: %+v", c)
	}
	cfg.Cluster = ClusterConfig{Enabled: true, NodeID: "n2"}
	path := filepath.Join(dir, "cluster", cntlidFile)
	hashed := cntlidChoice{first: nodeFirstCNTLID("n2")}
	if c := chooseFirstCNTLID(cfg, log); c != hashed {
		t.Fatalf("first start: %+v, want %+v", c, hashed)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := writeCNTLIDRecord(path, cntlidRecord{Node: "n2", Index: 3}); err != nil {
		t.Fatal(err)
	}
	first, _, _ := catalog.CNTLIDRange(3)
	if c := chooseFirstCNTLID(cfg, log); c.first != first || c.index != 3 {
		t.Fatalf("recorded index 3: %+v, want first %d", c, first)
	}
	for _, bad := range []string{`{"node":"n1","index":3}`, `{"node":"n2","index":99}`, `{"node":"n2","index":0}`, `nonsense`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if c := chooseFirstCNTLID(cfg, log); c != hashed {
			t.Fatalf("record %s: %+v, want the hashed start", bad, c)
		}
	}
	// cluster.data_dir moves the record with the rest of the member's state.
	cfg.Cluster.DataDir = filepath.Join(dir, "elsewhere")
	if c := chooseFirstCNTLID(cfg, log); c != hashed {
		t.Fatalf("other cluster dir: %+v", c)
	}
}

// fakeCatalogue is a catalogue whose changes the test signals; View
// reports each read on views.
type fakeCatalogue struct {
	mu    sync.Mutex
	st    *catalog.State
	ch    chan struct{}
	views chan struct{}
}

func (f *fakeCatalogue) View(fn func(*catalog.State)) {
	f.mu.Lock()
	fn(f.st)
	f.mu.Unlock()
	f.views <- struct{}{}
}

func (f *fakeCatalogue) Watch() (<-chan struct{}, func()) { return f.ch, func() {} }

func (f *fakeCatalogue) register(t *testing.T, id string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.st.Apply(catalog.Command{V: 1, Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: id, APIAddr: "a", RaftAddr: "r"}}); err != nil {
		t.Fatal(err)
	}
}

// TestWatchCNTLIDRange: the watch records the index the catalogue gives
// the node once it is registered, again when it changes, and not for
// other nodes; stop leaves the record current.
func TestWatchCNTLIDRange(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, cntlidFile)
	f := &fakeCatalogue{st: catalog.New(), ch: make(chan struct{}, 1), views: make(chan struct{}, 64)}
	f.register(t, "n1")
	var applied [][2]uint16
	apply := func(first, last uint16) error { applied = append(applied, [2]uint16{first, last}); return nil }
	stop := watchCNTLIDRange(f, "n2", path, cntlidChoice{first: nodeFirstCNTLID("n2")}, apply, slog.New(slog.DiscardHandler))
	defer stop()
	<-f.views // the first look: n2 is not registered
	// A pass that started after a View has finished the one before it.
	settle := func() {
		f.ch <- struct{}{}
		<-f.views
	}
	settle()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("record written before the node was registered: %v", err)
	}
	f.register(t, "n2")
	settle()
	settle()
	if rec, err := readCNTLIDRecord(path); err != nil || rec != (cntlidRecord{Node: "n2", Index: 2}) {
		t.Fatalf("record %+v %v, want n2's index 2", rec, err)
	}
	if f2, l2, _ := catalog.CNTLIDRange(2); len(applied) != 1 || applied[0] != [2]uint16{f2, l2} {
		t.Fatalf("ranges applied to the target: %v, want [%d %d] once", applied, f2, l2)
	}
	// n2 is removed and registered again after n3 took index 2... and n1 left.
	f.mu.Lock()
	f.st.Apply(catalog.Command{V: 1, Op: catalog.OpRemoveNode, NodeID: "n2"})
	f.mu.Unlock()
	f.register(t, "n3")
	f.register(t, "n2")
	stop()
	if rec, err := readCNTLIDRecord(path); err != nil || rec != (cntlidRecord{Node: "n2", Index: 3}) {
		t.Fatalf("after re-registering: record %+v %v, want index 3", rec, err)
	}
	if f3, l3, _ := catalog.CNTLIDRange(3); len(applied) != 2 || applied[1] != [2]uint16{f3, l3} {
		t.Fatalf("ranges applied to the target: %v, want index 3's [%d %d] last", applied, f3, l3)
	}
}

// TestClusterNodesCNTLIDRanges: two rdmablkd cluster nodes (in process,
// soft provider) get disjoint ranges from the catalogue and record them;
// restarted, each starts at its own range, and keeps it.
func TestClusterNodesCNTLIDRanges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two cluster nodes")
	}
	token := filepath.Join(t.TempDir(), "node.token")
	dirs := []string{t.TempDir(), t.TempDir()}
	start := func(i int, bootstrap bool, join string) *Daemon {
		t.Helper()
		cfg, err := Load(NewViper(), []string{"127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.DataDir = dirs[i]
		cfg.Metrics.Listen = ""
		cfg.Transport.Provider = "soft"
		cfg.Cluster = ClusterConfig{Enabled: true, NodeID: []string{"n1", "n2"}[i],
			RaftBind: "127.0.0.1:0", APIBind: "127.0.0.1:0", Bootstrap: bootstrap,
			Auth: ClusterAuth{NodeTokenFile: token},
			Raft: ClusterRaft{HeartbeatTimeout: 500 * time.Millisecond, ElectionTimeout: 500 * time.Millisecond}}
		if join != "" {
			cfg.Cluster.Join = []string{join}
		}
		d, err := Start(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1 := start(0, true, "")
	defer d1.Close()
	d2 := start(1, false, d1.Cluster().APIAddr())
	defer d2.Close()
	for i, d := range []*Daemon{d1, d2} {
		if d.cntlid.index != 0 || d.cntlid.first != nodeFirstCNTLID([]string{"n1", "n2"}[i]) {
			t.Fatalf("node %d's first start: %+v, want the hashed start", i+1, d.cntlid)
		}
	}
	// Wait until the catalogue has both nodes with their indices.
	ch, unwatch := d1.Cluster().Node.Watch()
	defer unwatch()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		var a, b catalog.Node
		d1.Cluster().Node.View(func(st *catalog.State) { a, b = st.Nodes["n1"], st.Nodes["n2"] })
		if a.CNTLIDIndex != 0 && b.CNTLIDIndex != 0 {
			if a.CNTLIDIndex == b.CNTLIDIndex {
				t.Fatalf("n1 and n2 share index %d", a.CNTLIDIndex)
			}
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("nodes not registered with ranges: n1 %+v, n2 %+v", a, b)
		}
	}
	// n2 stops first: it must have learnt its index from the catalogue
	// as replicated to it (its record is made current by Close).
	var want [2]int
	d1.Cluster().Node.View(func(st *catalog.State) { want = [2]int{st.Nodes["n1"].CNTLIDIndex, st.Nodes["n2"].CNTLIDIndex} })
	waitApplied(t, d2, "n2")
	tgts := []*target.Target{d1.tgt, d2.tgt} // Close forgets them
	for _, d := range []*Daemon{d2, d1} {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The first run's targets moved to their ranges once registered
	// (Close's last look at the catalogue has applied it).
	for i, tg := range tgts {
		f, l, _ := catalog.CNTLIDRange(want[i])
		if gf, gl := tg.CNTLIDRange(); gf != f || gl != l {
			t.Fatalf("node %d's first run: target range %d-%d, want its catalogue range %d-%d", i+1, gf, gl, f, l)
		}
	}
	for round := range 2 {
		for i := range 2 {
			d := start(i, false, "") // alone: the range comes from the record, not from a leader
			first, _, _ := catalog.CNTLIDRange(want[i])
			got := d.cntlid
			d.Close()
			if got.index != want[i] || got.first != first {
				t.Fatalf("restart %d of node %d: %+v, want index %d (first ID %d)", round+1, i+1, got, want[i], first)
			}
		}
	}
}

// waitApplied waits until d's own catalogue has node id with a range
// index.
func waitApplied(t *testing.T, d *Daemon, id string) {
	t.Helper()
	ch, unwatch := d.Cluster().Node.Watch()
	defer unwatch()
	timeout := time.After(60 * time.Second)
	for {
		var n catalog.Node
		d.Cluster().Node.View(func(st *catalog.State) { n = st.Nodes[id] })
		if n.CNTLIDIndex != 0 {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("%s's catalogue has no index for %s", id, id)
		}
	}
}
