package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// fakeNode is a one-node "cluster" that applies commands to a State.
type fakeNode struct {
	mu      sync.Mutex
	st      *catalog.State
	applied []catalog.Op
	voters  []string
}

func newFakeNode() *fakeNode {
	f := &fakeNode{st: catalog.New()}
	f.st.Apply(catalog.Command{V: catalog.CommandVersion, Op: catalog.OpRegisterNode,
		Node: &catalog.Node{ID: "n1", APIAddr: "127.0.0.1:1", RaftAddr: "127.0.0.1:2"}})
	return f
}

func (f *fakeNode) ID() string                   { return "n1" }
func (f *fakeNode) IsLeader() bool               { return true }
func (f *fakeNode) Leader() (string, string)     { return "n1", "127.0.0.1:2" }
func (f *fakeNode) RemoveServer(id string) error { return nil }
func (f *fakeNode) Snapshot() error              { return nil }
func (f *fakeNode) Status() cluster.Status {
	return cluster.Status{ID: "n1", State: "Leader", LeaderID: "n1", Members: []cluster.Member{{ID: "n1", Voter: true}}}
}
func (f *fakeNode) View(fn func(*catalog.State)) { f.mu.Lock(); defer f.mu.Unlock(); fn(f.st) }
func (f *fakeNode) AddVoter(id, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.voters = append(f.voters, id)
	return nil
}
func (f *fakeNode) Apply(c catalog.Command) (catalog.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, c.Op)
	return f.st.Apply(c)
}

const (
	adminTok  = "admin-secret-token-0123456789"
	readerTok = "reader-secret-token-0123456789"
	nodeTok   = "node-secret-token-0123456789"
)

func tokens(t *testing.T) []TokenEntry {
	t.Helper()
	f := filepath.Join(t.TempDir(), "tokens")
	body := "# comment\n\nadmin alice " + HashToken(adminTok) + "\nreader grafana " + HashToken(readerTok) + "\nnode cluster " + HashToken(nodeTok) + "\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	es, err := LoadTokens(f)
	if err != nil || len(es) != 3 {
		t.Fatalf("%v %v", es, err)
	}
	return es
}

func call(t *testing.T, h http.Handler, method, path, token, body string) (int, api.ErrorBody, http.Header) {
	t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var eb api.ErrorBody
	json.Unmarshal(w.Body.Bytes(), &eb)
	return w.Code, eb, w.Header()
}

// TestRoles: every endpoint class against every identity: no identity is
// 401, a wrong role 403, both JSON with a message naming the role needed;
// health is open.
func TestRoles(t *testing.T) {
	f := newFakeNode()
	s := New(Options{Node: f, Auth: NewAuth(tokens(t), RoleNone),
		VerifyJoin: func(context.Context, catalog.Node) error { return nil }})
	join := `{"node":{"id":"n2","api_addr":"127.0.0.1:3","raft_addr":"127.0.0.1:4"}}`
	vol := `{"name":"v","size":1048576}`
	apply := `{"command":{"v":1,"op":"set_volume_state","name":"nope","state":"online"}}`
	for _, c := range []struct {
		method, path, body, token string
		want                      int
		code                      string
	}{
		{"GET", "/v1/health", "", "", 200, ""},
		{"GET", "/v1/volumes", "", "", 401, api.CodeUnauthenticated},
		{"GET", "/v1/volumes", "", "wrong-token", 401, api.CodeUnauthenticated},
		{"GET", "/v1/volumes", "", readerTok, 200, ""},
		{"GET", "/v1/volumes", "", nodeTok, 200, ""},
		{"POST", "/v1/volumes", vol, readerTok, 403, api.CodeForbidden},
		{"POST", "/v1/volumes", vol, nodeTok, 403, api.CodeForbidden},
		{"POST", "/v1/volumes", vol, "", 401, api.CodeUnauthenticated},
		{"POST", "/v1/volumes", vol, adminTok, 201, ""},
		{"POST", "/v1/cluster/join", join, "", 401, api.CodeUnauthenticated},
		{"POST", "/v1/cluster/join", join, adminTok, 403, api.CodeForbidden},
		{"POST", "/v1/cluster/join", join, readerTok, 403, api.CodeForbidden},
		{"POST", "/v1/cluster/remove", `{"id":"n2"}`, adminTok, 403, api.CodeForbidden},
		{"POST", "/v1/internal/apply", apply, "", 401, api.CodeUnauthenticated},
		{"POST", "/v1/internal/apply", apply, adminTok, 403, api.CodeForbidden},
		{"POST", "/v1/internal/apply", apply, nodeTok, 404, api.CodeNotFound},
		{"POST", "/v1/cluster/join", join, nodeTok, 200, ""},
	} {
		st, eb, _ := call(t, s, c.method, c.path, c.token, c.body)
		if st != c.want || eb.Error.Code != c.code {
			t.Errorf("%s %s token %q: %d %+v, want %d %s", c.method, c.path, c.token, st, eb, c.want, c.code)
		}
		if st == 401 || st == 403 {
			if !strings.Contains(eb.Error.Message, "role") {
				t.Errorf("%s %s: message does not name the role: %q", c.method, c.path, eb.Error.Message)
			}
		}
	}
	if len(f.voters) != 1 || f.voters[0] != "n2" {
		t.Fatalf("voters added: %v (only the node token's join)", f.voters)
	}
}

// TestInternalApplyOps: internal/apply takes only the commands nodes
// propose; creates, deletes and the rest go through the typed endpoints.
func TestInternalApplyOps(t *testing.T) {
	f := newFakeNode()
	s := New(Options{Node: f, Auth: NewAuth(tokens(t), RoleNone)})
	for _, op := range []catalog.Op{catalog.OpCreateVolume, catalog.OpDeleteVolume, catalog.OpRemoveNode,
		catalog.OpCreateSubsystem, catalog.OpAddHost, catalog.OpSetAllowAnyHost, catalog.OpResizeVolume} {
		st, eb, _ := call(t, s, "POST", "/v1/internal/apply", nodeTok, `{"command":{"v":1,"op":"`+string(op)+`"}}`)
		if st != 403 || eb.Error.Code != api.CodeForbidden {
			t.Errorf("%s: %d %+v, want 403", op, st, eb)
		}
	}
	if len(f.applied) != 0 {
		t.Fatalf("applied %v", f.applied)
	}
}

// TestMethodNotAllowed: a known path with a wrong method is 405 with
// Allow; an unknown path 404.
func TestMethodNotAllowed(t *testing.T) {
	s := New(Options{Node: newFakeNode()})
	st, eb, hdr := call(t, s, "PATCH", "/v1/volumes", "", "")
	if st != 405 || eb.Error.Code != api.CodeMethod || hdr.Get("Allow") != "GET, POST" {
		t.Fatalf("PATCH /v1/volumes: %d %+v Allow=%q", st, eb, hdr.Get("Allow"))
	}
	if st, eb, _ := call(t, s, "GET", "/v1/nope", "", ""); st != 404 || eb.Error.Code != api.CodeNotFound {
		t.Fatalf("GET /v1/nope: %d %+v", st, eb)
	}
}

// TestCreateValidation: the create handler uses catalog.NewVolume: the
// name pattern is in the error, size is required.
func TestCreateValidation(t *testing.T) {
	s := New(Options{Node: newFakeNode()})
	for body, want := range map[string]string{
		`{"name":"bad name","size":4096}`: catalog.NamePattern,
		`{"name":"v"}`:                    "size is required",
	} {
		st, eb, _ := call(t, s, "POST", "/v1/volumes", "", body)
		if st != 400 || !strings.Contains(eb.Error.Message, want) {
			t.Errorf("%s: %d %+v, want 400 with %q", body, st, eb, want)
		}
	}
}

// TestCertRole: the URI SAN convention.
func TestCertRole(t *testing.T) {
	u := func(s string) *url.URL { x, _ := url.Parse(s); return x }
	for _, c := range []struct {
		uris []*url.URL
		role Role
		node string
	}{
		{[]*url.URL{u("rdmablk://node/n1")}, RoleNode | RoleReader, "n1"},
		{[]*url.URL{u("rdmablk://admin/alice")}, RoleAdmin | RoleReader, ""},
		{[]*url.URL{u("rdmablk://reader/g")}, RoleReader, ""},
		{[]*url.URL{u("spiffe://node/n1"), u("rdmablk://root/x"), u("rdmablk://node/")}, RoleNone, ""},
		{nil, RoleNone, ""},
	} {
		r, n, _ := CertRole(c.uris)
		if r != c.role || n != c.node {
			t.Errorf("%v: %v %q, want %v %q", c.uris, r, n, c.role, c.node)
		}
	}
}

// TestLoadTokensErrors: malformed lines name the file and line.
func TestLoadTokensErrors(t *testing.T) {
	dir := t.TempDir()
	for body, want := range map[string]string{
		"admin alice\n":                          ":1: want",
		"\nroot x " + HashToken("x") + "\n":      ":2: role",
		"admin alice sha256:abcd\n":              ":1: hash",
		"admin alice " + strings.Repeat("a", 64): ":1: hash",
	} {
		f := filepath.Join(dir, "tokens")
		os.WriteFile(f, []byte(body), 0o600)
		if _, err := LoadTokens(f); err == nil || !strings.Contains(err.Error(), f+want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	if _, err := LoadTokens(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
