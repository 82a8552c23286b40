package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/test/testproc"
)

// proc is one rdmablkd cluster node run as a child process; its raft and
// API addresses are fixed so that it can be killed and restarted.
type proc struct {
	*testproc.Daemon
	id, dir, cfg string
	raft, api    string
}

const procConfig = `data_dir: %s
log: {level: info, format: json}
transport: {provider: soft}
listeners: [{addr: %q}]
volumes: []
subsystems: []
cluster:
  enabled: true
  node_id: %s
  raft_bind: %s
  api_bind: %s
  bootstrap: %v
  join: [%s]
  resync: 2s
  auth: {node_token_file: %s}
  raft: {heartbeat_timeout: 500ms, election_timeout: 500ms, snapshot_threshold: 64}
%s`

// procToken writes the node token the test's processes share (0600).
func procToken(t *testing.T) string {
	f := filepath.Join(t.TempDir(), "node.token")
	if err := os.WriteFile(f, []byte(testNodeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func newProc(t *testing.T, id string, bootstrap bool, join, tokenFile string) *proc {
	return newProcConfig(t, id, bootstrap, join, tokenFile, "127.0.0.1:0", "")
}

// newProcConfig is newProc with the data listener's address and extra
// lines of the cluster section (indented two spaces, each ending in \n).
func newProcConfig(t *testing.T, id string, bootstrap bool, join, tokenFile, listen, extra string) *proc {
	p := &proc{id: id, dir: t.TempDir(), raft: testproc.FreePort(t), api: testproc.FreePort(t)}
	p.cfg = filepath.Join(p.dir, "rdmablkd.yaml")
	if err := os.WriteFile(p.cfg, fmt.Appendf(nil, procConfig, p.dir, listen, id, p.raft, p.api, bootstrap, join, tokenFile, extra), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Daemon = testproc.New(t, testproc.BuildGoBinary(t, "github.com/rdmablk/rdmablk/cmd/rdmablkd"))
	p.Name = id
	if os.Getenv("RDMABLK_TEST_LOG") != "" {
		p.Mirror = os.Stderr
	}
	return p
}

// start runs the daemon and waits for its "cluster ready" line.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.Start("--config", p.cfg)
	if a := p.WaitLog("cluster ready", 60*time.Second).Str("api_addr"); a != p.api {
		t.Fatalf("%s: api %s, configured %s", p.id, a, p.api)
	}
}

func (p *proc) client() *api.Client { return api.NewClient(p.api, nil) }

// TestThreeProcesses: three rdmablkd processes; SIGKILL of the leader →
// a new leader, writes continue, nothing committed is lost; the killed
// node restarts and catches up.
func TestThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs rdmablkd")
	}
	tok := procToken(t)
	ps := []*proc{newProc(t, "n1", true, "", tok)}
	ps[0].start(t)
	for _, id := range []string{"n2", "n3"} {
		p := newProc(t, id, false, `"`+ps[0].api+`"`, tok)
		p.start(t)
		ps = append(ps, p)
	}
	status := func(p *proc) (api.StatusResponse, error) { return p.status(t) }
	waitMembers(t, ps)
	var want []string
	create := func(via *proc, name string) {
		t.Helper()
		c := via.client()
		defer c.Close()
		if _, err := c.CreateVolume(ctx(t), api.CreateVolumeRequest{Name: name, Size: 1 << 20, Node: via.id}); err != nil {
			t.Fatalf("create %s via %s: %v", name, via.id, err)
		}
		want = append(want, name)
		slices.Sort(want)
	}
	names := func(p *proc) []string {
		c := p.client()
		defer c.Close()
		vs, err := c.Volumes(ctx(t))
		if err != nil {
			return nil
		}
		var out []string
		for _, v := range vs {
			out = append(out, v.Name)
		}
		return out
	}
	converged := func(ps ...*proc) func() bool {
		return func() bool {
			for _, p := range ps {
				if !slices.Equal(names(p), want) {
					return false
				}
			}
			return true
		}
	}
	for i, p := range ps {
		create(p, fmt.Sprintf("before-%d", i))
	}
	eventually(t, 30*time.Second, "volumes visible on all", converged(ps...))

	st, _ := status(ps[0])
	var leader *proc
	var rest []*proc
	for _, p := range ps {
		if p.id == st.LeaderID {
			leader = p
		} else {
			rest = append(rest, p)
		}
	}
	if leader == nil {
		t.Fatalf("leader %q unknown", st.LeaderID)
	}
	t0 := time.Now()
	leader.Kill()
	eventually(t, 60*time.Second, "new leader", func() bool {
		st, err := status(rest[0])
		return err == nil && st.LeaderID != "" && st.LeaderID != leader.id
	})
	t.Logf("SIGKILL of leader %s: new leader after %v", leader.id, time.Since(t0))
	create(rest[0], "after-kill-0")
	create(rest[1], "after-kill-1")
	eventually(t, 30*time.Second, "survivors agree, nothing lost", converged(rest...))

	leader.start(t)
	eventually(t, 60*time.Second, "restarted node catches up", converged(ps...))
}

// status asks p's API for the cluster status.
func (p *proc) status(t *testing.T) (api.StatusResponse, error) {
	c := p.client()
	defer c.Close()
	return c.Status(ctx(t))
}

// waitMembers waits until every node of ps sees all of them as raft
// members and registered nodes, and a leader.
func waitMembers(t *testing.T, ps []*proc) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d members registered", len(ps)), func() bool {
		for _, p := range ps {
			st, err := p.status(t)
			if err != nil || len(st.Members) != len(ps) || len(st.Nodes) != len(ps) || st.LeaderID == "" {
				return false
			}
		}
		return true
	})
}
