package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// fakeCluster is a leader of four nodes n1..n4 applying commands to a
// catalogue, for the control API server the admin commands talk to.
type fakeCluster struct {
	mu sync.Mutex
	st *catalog.State
}

func (f *fakeCluster) ID() string                    { return "n1" }
func (f *fakeCluster) IsLeader() bool                { return true }
func (f *fakeCluster) Leader() (string, string)      { return "n1", "127.0.0.1:2" }
func (f *fakeCluster) AddVoter(string, string) error { return nil }
func (f *fakeCluster) RemoveServer(string) error     { return nil }
func (f *fakeCluster) Snapshot() error               { return nil }
func (f *fakeCluster) Status() cluster.Status        { return cluster.Status{ID: "n1", State: "Leader"} }
func (f *fakeCluster) View(fn func(*catalog.State))  { f.mu.Lock(); defer f.mu.Unlock(); fn(f.st) }
func (f *fakeCluster) Apply(c catalog.Command) (catalog.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st.Apply(c)
}

// startAPI serves a control API over a fresh four-node catalogue; every
// node counts as reachable.
func startAPI(t *testing.T) (string, *fakeCluster) {
	t.Helper()
	f := &fakeCluster{st: catalog.New()}
	for _, id := range []string{"n1", "n2", "n3", "n4"} {
		f.st.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpRegisterNode, Node: &catalog.Node{ID: id, APIAddr: "x", RaftAddr: "y"}})
	}
	s := server.New(server.Options{Node: f, Live: func(_ context.Context, ns []catalog.Node) map[string]server.Reach {
		m := map[string]server.Reach{}
		for _, n := range ns {
			m[n.ID] = server.Live
		}
		return m
	}})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL, f
}

// volumeCLI runs `rdmablk volume ARGS --api URL` and returns its output.
func volumeCLI(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetArgs(append([]string{"volume"}, append(args, "--api", url)...))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.Execute()
	return out.String(), err
}

// TestVolumeReplicaCommands: create --replicas, status (table and -o
// json), replica add/remove and failover, and their errors.
func TestVolumeReplicaCommands(t *testing.T) {
	url, f := startAPI(t)
	out, err := volumeCLI(t, url, "create", "db", "--size", "10M", "--replicas", "3")
	if err != nil || !strings.Contains(out, "3/3") {
		t.Fatalf("create: %v\n%s", err, out)
	}
	if _, err := volumeCLI(t, url, "create", "x", "--size", "1M", "--replicas", "4"); err == nil || !strings.Contains(err.Error(), "--replicas 4: want 1 to 3") {
		t.Fatalf("--replicas 4: %v", err)
	}
	if _, err := volumeCLI(t, url, "create", "x", "--size", "1M", "--replicas", "2", "--replica-nodes", "n2,n3"); err == nil || !strings.Contains(err.Error(), "needs 1 besides the owner") {
		t.Fatalf("--replica-nodes count: %v", err)
	}

	// A copy is rebuilding: the owner reported half done at 1 MiB/s.
	if _, err := volumeCLI(t, url, "replica", "remove", "db", "--node", "n3"); err != nil {
		t.Fatal(err)
	}
	if out, err := volumeCLI(t, url, "replica", "add", "db", "--node", "n4"); err != nil || !strings.Contains(out, "2/3") {
		t.Fatalf("replica add: %v\n%s", err, out)
	}
	f.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpReportRebuild, Name: "db", NodeID: "n4", Epoch: 1,
		Rebuild: &catalog.Rebuild{Full: true, Copied: 5 << 20, Total: 10 << 20, Rate: 1 << 20}})

	out, err = volumeCLI(t, url, "status", "db")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "owner n1 (epoch 1), 2 of 3 replicas in sync") {
		t.Fatalf("status table:\n%s", out)
	}
	for i, want := range [][]string{
		{"NODE", "STATE", "OWNER", "REBUILD", "ETA"},
		{"n1", "in-sync", "*", "-", "-"},
		{"n2", "in-sync", "-", "-"},
		{"n4", "syncing", "50.0%", "(full)", "5s"},
	} {
		if got := strings.Fields(lines[i+1]); !equalPrefix(got, want) {
			t.Errorf("status row %d: %q, want %q", i, lines[i+1], want)
		}
	}

	out, err = volumeCLI(t, url, "status", "db", "-o", "json")
	var js map[string]any
	if err != nil || json.Unmarshal([]byte(out), &js) != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	checkKeys(t, "volume status", js, "")
	reps, _ := js["replica_status"].([]any)
	if js["owner"] != "n1" || len(reps) != 3 || reps[2].(map[string]any)["percent"] != float64(50) || reps[2].(map[string]any)["eta_seconds"] != float64(5) {
		t.Fatalf("status json: %s", out)
	}
	if _, err := volumeCLI(t, url, "status", "db", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "want table or json") {
		t.Fatalf("-o yaml: %v", err)
	}

	// Failover: a syncing copy cannot own; an in-sync one can.
	if _, err := volumeCLI(t, url, "failover", "db", "--to", "n4"); err == nil || !strings.Contains(err.Error(), "only an in-sync replica may become owner") || !strings.Contains(err.Error(), "409") {
		t.Fatalf("failover to a syncing copy: %v", err)
	}
	if out, err := volumeCLI(t, url, "failover", "db", "--to", "n2"); err != nil || !strings.Contains(out, "\tn2\t") && !strings.Contains(out, " n2 ") {
		t.Fatalf("failover: %v\n%s", err, out)
	}
	if out, _ := volumeCLI(t, url, "status", "db"); !strings.Contains(out, "owner n2 (epoch 2)") {
		t.Fatalf("status after failover:\n%s", out)
	}
	if _, err := volumeCLI(t, url, "replica", "remove", "db", "--node", "n2"); err == nil || !strings.Contains(err.Error(), "is the owner") {
		t.Fatalf("remove the owner's copy: %v", err)
	}
	if _, err := volumeCLI(t, url, "replica", "add", "db"); err == nil || !strings.Contains(err.Error(), "--node is required") {
		t.Fatalf("add without --node: %v", err)
	}
}

func equalPrefix(got, want []string) bool {
	if len(got) < len(want) {
		return false
	}
	for i := range want {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestVolumeStatusResync: while the owner resyncs the other in-sync
// copies after an unclean hand-off, `volume status` says so (table: a
// "resyncing" line with percent, MiB and ETA; JSON: "resync"), and
// nothing once the owner reports the end.
func TestVolumeStatusResync(t *testing.T) {
	url, f := startAPI(t)
	if _, err := volumeCLI(t, url, "create", "db", "--size", "10M", "--replicas", "3", "--replica-nodes", "n2,n3"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpReportResync, Name: "db", Epoch: 1,
		Rebuild: &catalog.Rebuild{Copied: 8 << 20, Total: 20 << 20, Rate: 1 << 20}}); err != nil {
		t.Fatal(err)
	}
	out, err := volumeCLI(t, url, "status", "db")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || lines[1] != "resyncing from n1 to n2,n3: 40.0% (8.0 MiB of 20.0 MiB), ETA 12s" {
		t.Fatalf("status table:\n%s", out)
	}
	out, err = volumeCLI(t, url, "status", "db", "-o", "json")
	var js map[string]any
	if err != nil || json.Unmarshal([]byte(out), &js) != nil {
		t.Fatalf("status -o json: %v\n%s", err, out)
	}
	checkKeys(t, "volume status", js, "")
	rs, _ := js["resync"].(map[string]any)
	prog, _ := rs["progress"].(map[string]any)
	if rs["source"] != "n1" || rs["percent"] != float64(40) || rs["eta_seconds"] != float64(12) || prog["total"] != float64(20<<20) || len(rs["targets"].([]any)) != 2 {
		t.Fatalf("status json resync: %s", out)
	}

	// No rate yet: ETA unknown. Then the end: the line goes.
	f.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpReportResync, Name: "db", Epoch: 1, Rebuild: &catalog.Rebuild{Total: 20 << 20}})
	if out, _ := volumeCLI(t, url, "status", "db"); !strings.Contains(out, "resyncing from n1 to n2,n3: 0.0% (0.0 MiB of 20.0 MiB), ETA unknown\n") {
		t.Fatalf("status without a rate:\n%s", out)
	}
	f.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpReportResync, Name: "db", Epoch: 1})
	out, _ = volumeCLI(t, url, "status", "db")
	if strings.Contains(out, "resync") {
		t.Fatalf("status after the resync ended:\n%s", out)
	}
	if out, _ := volumeCLI(t, url, "status", "db", "-o", "json"); strings.Contains(out, `"resync"`) {
		t.Fatalf("json after the resync ended:\n%s", out)
	}
}

// TestClusterStatusCNTLIDRanges: `cluster status --json` gives each
// node's controller-ID range as the catalogue assigned it (disjoint).
func TestClusterStatusCNTLIDRanges(t *testing.T) {
	url, _ := startAPI(t)
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetArgs([]string{"cluster", "status", "--json", "--api", url})
	root.SetOut(&out)
	root.SetErr(&errb)
	if err := root.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var st struct {
		Nodes []struct {
			ID    string `json:"id"`
			Index int    `json:"cntlid_index"`
			First int    `json:"cntlid_first"`
			Last  int    `json:"cntlid_last"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || len(st.Nodes) != 4 {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for i, n := range st.Nodes {
		if n.Index != i+1 || n.First != i*catalog.CNTLIDStride+1 || n.Last != (i+1)*catalog.CNTLIDStride {
			t.Errorf("node %s: index %d, %d-%d", n.ID, n.Index, n.First, n.Last)
		}
	}
}
