package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/cluster/api"
)

// builtBin is a command of this module built once per test binary.
type builtBin struct {
	once sync.Once
	path string
	err  error
}

var (
	binDirOnce sync.Once
	binDir     string
	binDirErr  error
	bins       = map[string]*builtBin{"rdmablkd": {}, "rdmablk": {}}
)

// goBin builds cmd/<name> (once) and returns the executable's path.
func goBin(t *testing.T, name string) string {
	t.Helper()
	binDirOnce.Do(func() { binDir, binDirErr = os.MkdirTemp("", "rdmablk-cluster-bin") })
	if binDirErr != nil {
		t.Fatal(binDirErr)
	}
	b := bins[name]
	b.once.Do(func() {
		b.path = filepath.Join(binDir, name)
		out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", b.path,
			"github.com/rdmablk/rdmablk/cmd/"+name).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

func rdmablkd(t *testing.T) string { return goBin(t, "rdmablkd") }

// freePort returns a loopback address whose port was free a moment ago
// (raft addresses must survive a restart, so they cannot be :0).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type proc struct {
	id, dir, cfg string
	raft, api    string
	cmd          *exec.Cmd
	done         chan struct{}
}

const procConfig = `data_dir: %s
log: {level: info, format: json}
transport: {provider: soft}
listeners: [{addr: "127.0.0.1:0"}]
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
  raft: {heartbeat_timeout: 500ms, election_timeout: 500ms, snapshot_threshold: 64}
`

func newProc(t *testing.T, id string, bootstrap bool, join string) *proc {
	p := &proc{id: id, dir: t.TempDir(), raft: freePort(t), api: freePort(t)}
	p.cfg = filepath.Join(p.dir, "rdmablkd.yaml")
	if err := os.WriteFile(p.cfg, fmt.Appendf(nil, procConfig, p.dir, id, p.raft, p.api, bootstrap, join), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// start runs the daemon and waits for its "cluster ready" line.
func (p *proc) start(t *testing.T) {
	t.Helper()
	p.cmd = exec.Command(rdmablkd(t), "--config", p.cfg)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "cluster ready" {
				ready <- fmt.Sprint(rec["api_addr"])
			}
			if os.Getenv("RDMABLK_TEST_LOG") != "" {
				fmt.Fprintf(os.Stderr, "[%s] %s\n", p.id, sc.Bytes())
			}
		}
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill(syscall.SIGKILL) })
	select {
	case a := <-ready:
		if a != p.api {
			t.Fatalf("%s: api %s, configured %s", p.id, a, p.api)
		}
	case <-p.done:
		t.Fatalf("%s exited before ready", p.id)
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no ready line", p.id)
	}
}

func (p *proc) kill(sig syscall.Signal) {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(sig)
	<-p.done
}

func (p *proc) client() *api.Client { return api.NewClient(p.api, nil) }

// TestThreeProcesses: three rdmablkd processes; SIGKILL of the leader →
// a new leader, writes continue, nothing committed is lost; the killed
// node restarts and catches up.
func TestThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs rdmablkd")
	}
	ps := []*proc{newProc(t, "n1", true, "")}
	ps[0].start(t)
	for _, id := range []string{"n2", "n3"} {
		p := newProc(t, id, false, `"`+ps[0].api+`"`)
		p.start(t)
		ps = append(ps, p)
	}
	status := func(p *proc) (api.StatusResponse, error) {
		c := p.client()
		defer c.Close()
		return c.Status(ctx(t))
	}
	eventually(t, 60*time.Second, "three members registered", func() bool {
		for _, p := range ps {
			st, err := status(p)
			if err != nil || len(st.Members) != 3 || len(st.Nodes) != 3 || st.LeaderID == "" {
				return false
			}
		}
		return true
	})
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
	leader.kill(syscall.SIGKILL)
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
