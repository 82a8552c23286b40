package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rdmablk/rdmablk/cluster/agent"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// fastRaft shortens raft's timeouts so that failovers in tests take
// well under a second; a test that wants the production defaults clears
// it (and restores it).
var fastRaft = true

// logSink, when set, receives every member's log at debug level (JSON):
// tests that assert on the log set it before starting members.
var logSink io.Writer

func quietLogger() *slog.Logger {
	if logSink != nil {
		return slog.New(slog.NewJSONHandler(logSink, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if os.Getenv("RDMABLK_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// cutLayer is a raft.StreamLayer over TCP that a test can cut off the
// network (every connection closed, new ones refused both ways) and heal.
type cutLayer struct {
	net.Listener
	mu    sync.Mutex // guards cut and conns
	cut   bool
	conns map[net.Conn]struct{}
}

func newCutLayer(addr string) (*cutLayer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &cutLayer{Listener: l, conns: map[net.Conn]struct{}{}}, nil
}

func (c *cutLayer) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return false
	}
	c.conns[conn] = struct{}{}
	return true
}

func (c *cutLayer) Accept() (net.Conn, error) {
	for {
		conn, err := c.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c.track(conn) {
			return conn, nil
		}
		conn.Close()
	}
}

func (c *cutLayer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c.mu.Lock()
	cut := c.cut
	c.mu.Unlock()
	if cut {
		return nil, errors.New("cut off")
	}
	conn, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if !c.track(conn) {
		conn.Close()
		return nil, errors.New("cut off")
	}
	return conn, nil
}

func (c *cutLayer) setCut(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for conn := range c.conns {
			conn.Close()
		}
		clear(c.conns)
	}
}

// member is one in-process cluster node: target, soft RDMA listener, agent.
type member struct {
	id, dir  string
	raftAddr string
	tgt      *target.Target
	l        *rdma.Listener
	layer    *cutLayer
	a        *agent.Agent
	c        *api.Client
}

// volumeOpen, when set, is the members' backing-file opener (a test that
// sets it resets it when done; tests here do not run in parallel).
var volumeOpen reconcile.OpenFunc

// testNodeToken is the in-process clusters' node token (the nodes'
// identity towards each other when they have no node certificate).
const testNodeToken = "test-cluster-node-token"

// apiTLS is the control API's TLS for every member of a test cluster:
// server is the API's (client certificates required), client what members
// and the test's m.c use to reach an API.
// perNode, when set, gives each member its own (node-certificate)
// configuration instead.
type apiTLS struct {
	server, client *tls.Config
	perNode        func(id string) (server, client *tls.Config)
	// noToken leaves the node token out: node certificates are the only
	// node identities.
	noToken bool
}

// startMember starts (or restarts, with the same dir and raft address) a
// member. raftAddr "" picks a port.
func startMember(t testing.TB, id, dir, raftAddr string, bootstrap bool, join []string) *member {
	t.Helper()
	return startMemberTLS(t, id, dir, raftAddr, bootstrap, join, nil)
}

// startMemberTLS is startMember with the API over TLS (tc nil: plain HTTP).
func startMemberTLS(t testing.TB, id, dir, raftAddr string, bootstrap bool, join []string, tc *apiTLS) *member {
	t.Helper()
	var srvTLS, cliTLS *tls.Config
	if tc != nil {
		srvTLS, cliTLS = tc.server, tc.client
		if tc.perNode != nil {
			srvTLS, cliTLS = tc.perNode(id)
		}
	}
	if raftAddr == "" {
		raftAddr = "127.0.0.1:0"
	}
	var hb time.Duration // 0: the cluster package's defaults
	if fastRaft {
		hb = 400 * time.Millisecond
	}
	token := testNodeToken
	if tc != nil && tc.noToken {
		token = ""
	}
	var layer *cutLayer
	var err error
	for range 50 { // a restart may race the old socket's release
		if layer, err = newCutLayer(raftAddr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := &member{id: id, dir: dir, raftAddr: layer.Addr().String(), layer: layer}
	disc := reconcile.NewDiscovery(id)
	m.tgt = target.New(target.Options{Logger: quietLogger(), Workers: 4, Discovery: disc})
	m.l, err = rdma.Listen(rdma.Config{Provider: soft.New(soft.Options{}), Target: m.tgt, Addr: "127.0.0.1:0", PortID: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	m.a, err = agent.Start(agent.Config{
		NodeID: id, DataDir: dir, APIBind: "127.0.0.1:0", Bootstrap: bootstrap, Join: join,
		StreamLayer:      layer,
		HeartbeatTimeout: hb, ElectionTimeout: hb,
		SnapshotThreshold: 64, TrailingLogs: 32, SnapshotInterval: 200 * time.Millisecond,
		Target: m.tgt, Discovery: disc, Logger: quietLogger(), Resync: 2 * time.Second,
		ServerTLS: srvTLS, ClientTLS: cliTLS, NodeToken: token,
		OpenLeg: testLegOpener, OpenVolume: volumeOpen,
	})
	if err != nil {
		t.Fatal(err)
	}
	m.c = api.NewClient(m.a.APIAddr(), cliTLS)
	return m
}

// stop shuts a member down in the daemon's order; the data stays.
func (m *member) stop(t testing.TB) {
	t.Helper()
	if m.a == nil {
		return
	}
	errs := []error{m.a.Stop(), m.l.Close(), m.tgt.Close(), m.a.CloseVolumes()}
	m.c.Close()
	m.a = nil
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
}

func (m *member) dataAddr() string { return m.l.Addr() }

// startCluster starts n members: the first bootstraps, the rest join it.
func startCluster(t testing.TB, n int) []*member {
	t.Helper()
	return startClusterTLS(t, n, nil)
}

// startClusterTLS is startCluster with the API over TLS (tc nil: plain).
func startClusterTLS(t testing.TB, n int, tc *apiTLS) []*member {
	t.Helper()
	ms := []*member{startMemberTLS(t, "n1", t.TempDir(), "", true, nil, tc)}
	for i := 2; i <= n; i++ {
		ms = append(ms, startMemberTLS(t, "n"+string(rune('0'+i)), t.TempDir(), "", false, []string{ms[0].a.APIAddr()}, tc))
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.stop(t)
		}
	})
	eventually(t, 30*time.Second, "all members registered everywhere", func() bool {
		for _, m := range ms {
			if m.a == nil {
				continue
			}
			st, err := m.c.Status(context.Background())
			if err != nil || len(st.Members) != n || len(st.Nodes) != n || st.LeaderID == "" {
				return false
			}
		}
		return true
	})
	return ms
}

// eventually polls cond (every 20 ms) until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", d, what)
		}
		<-tick.C
	}
}

func leaderOf(t testing.TB, ms []*member) *member {
	t.Helper()
	var lead *member
	eventually(t, 30*time.Second, "a leader", func() bool {
		for _, m := range ms {
			if m.a != nil && m.a.Node.IsLeader() {
				lead = m
				return true
			}
		}
		return false
	})
	return lead
}

func volumeNames(t testing.TB, m *member) []string {
	var names []string
	m.a.Node.View(func(st *catalog.State) {
		for _, v := range st.VolumeList() {
			names = append(names, v.Name)
		}
	})
	return names
}

func sameVolumes(t testing.TB, ms []*member, want []string) func() bool {
	return func() bool {
		for _, m := range ms {
			if m.a != nil && !slices.Equal(volumeNames(t, m), want) {
				return false
			}
		}
		return true
	}
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
