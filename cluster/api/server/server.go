package server

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Cluster is what the Server needs from a node (*cluster.Node).
type Cluster interface {
	ID() string
	IsLeader() bool
	Leader() (id, raftAddr string)
	Apply(c catalog.Command) (catalog.Result, error)
	AddVoter(id, raftAddr string) error
	RemoveServer(id string) error
	Status() cluster.Status
	View(fn func(st *catalog.State))
	Snapshot() error
}

// Options configure a Server.
type Options struct {
	Node Cluster
	// Metrics serves /metrics; nil leaves it out.
	Metrics http.Handler
	// ClientTLS, when set, is used to forward to the leader over HTTPS
	// (every node's API then speaks TLS).
	ClientTLS *tls.Config
	// ForwardTimeout bounds how long a write waits for a leader (0 = 15 s).
	ForwardTimeout time.Duration
	// Auth authorises requests; nil grants every role to everyone (tests
	// and insecure mode only).
	Auth *Auth
	// NodeToken, when set, is presented (Authorization: Bearer) to other
	// nodes' APIs as this node's identity, next to ClientTLS's certificate.
	NodeToken string
	// VerifyJoin checks, before a join changes membership, that the
	// joining node answers at its API address as the node ID it claims and
	// that its raft address accepts connections. nil = the default check;
	// tests may replace it.
	VerifyJoin func(ctx context.Context, n catalog.Node) error
	// Live reports how each of nodes can be reached now, for replica
	// placement and failover (a node missing from the map: Unreachable).
	// nil = each node's /v1/health, a second at most (this node is always
	// Live); tests may replace it.
	Live   func(ctx context.Context, nodes []catalog.Node) map[string]Reach
	Logger *slog.Logger
}

// Server is the HTTP handler of one node's control API.
type Server struct {
	o    Options
	mux  *http.ServeMux
	http *http.Client
}

const (
	fwdHeader         = "X-Rdmablk-Forwarded"
	originHeader      = "X-Rdmablk-Origin-Node"
	callerRolesHeader = "X-Rdmablk-Caller-Roles"
	callerNameHeader  = "X-Rdmablk-Caller"
	maxBody           = 1 << 20
)

// New builds the handler.
func New(o Options) *Server {
	if o.ForwardTimeout == 0 {
		o.ForwardTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Auth == nil {
		o.Auth = NewAuth(nil, RoleAll)
	}
	tr := &http.Transport{TLSClientConfig: o.ClientTLS, MaxIdleConnsPerHost: 16}
	s := &Server{o: o, mux: http.NewServeMux(), http: &http.Client{Transport: tr}}
	if s.o.VerifyJoin == nil {
		s.o.VerifyJoin = s.verifyJoin
	}
	s.routes()
	return s
}

// ServeHTTP implements http.Handler. A path that exists under another
// method is 405 with Allow; an unknown path 404 (both JSON).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pat := s.mux.Handler(r); pat != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		r2 := r.Clone(r.Context())
		r2.Method = m
		if _, pat := s.mux.Handler(r2); pat != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeErr(w, http.StatusMethodNotAllowed, api.CodeMethod, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	writeErr(w, http.StatusNotFound, api.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
}

func (s *Server) routes() {
	m := s.mux
	read := func(h http.HandlerFunc) http.HandlerFunc { return s.guard(RoleReader, h) }
	admin := func(h http.HandlerFunc) http.HandlerFunc { return s.guard(RoleAdmin, s.write(h)) }
	node := func(h http.HandlerFunc) http.HandlerFunc { return s.guard(RoleNode, s.write(h)) }

	m.HandleFunc("GET /v1/health", s.health) // open: load balancers and probes
	m.HandleFunc("GET /v1/cluster/status", read(s.status))
	m.HandleFunc("POST /v1/cluster/join", node(s.join))
	m.HandleFunc("POST /v1/cluster/remove", node(s.remove))
	m.HandleFunc("POST /v1/cluster/snapshot", s.guard(RoleAdmin, s.snapshot))
	m.HandleFunc("POST /v1/internal/apply", node(s.internalApply))

	m.HandleFunc("GET /v1/volumes", read(s.listVolumes))
	m.HandleFunc("POST /v1/volumes", admin(s.createVolume))
	m.HandleFunc("GET /v1/volumes/{name}", read(s.getVolume))
	m.HandleFunc("POST /v1/volumes/{name}/resize", admin(s.resizeVolume))
	m.HandleFunc("POST /v1/volumes/{name}/repair", admin(s.repairVolume))
	m.HandleFunc("DELETE /v1/volumes/{name}", admin(s.deleteVolume))
	m.HandleFunc("GET /v1/volumes/{name}/status", read(s.volumeStatus))
	m.HandleFunc("POST /v1/volumes/{name}/replicas", admin(s.addReplica))
	m.HandleFunc("DELETE /v1/volumes/{name}/replicas/{node}", admin(s.removeReplica))
	m.HandleFunc("POST /v1/volumes/{name}/failover", admin(s.failover))

	m.HandleFunc("GET /v1/subsystems", read(s.listSubsystems))
	m.HandleFunc("POST /v1/subsystems", admin(s.createSubsystem))
	m.HandleFunc("GET /v1/subsystems/{nqn}", read(s.getSubsystem))
	m.HandleFunc("DELETE /v1/subsystems/{nqn}", admin(s.deleteSubsystem))
	m.HandleFunc("POST /v1/subsystems/{nqn}/namespaces", admin(s.addNamespace))
	m.HandleFunc("DELETE /v1/subsystems/{nqn}/namespaces/{nsid}", admin(s.removeNamespace))
	m.HandleFunc("POST /v1/subsystems/{nqn}/hosts", admin(s.addHost))
	m.HandleFunc("DELETE /v1/subsystems/{nqn}/hosts/{host}", admin(s.removeHost))
	m.HandleFunc("PUT /v1/subsystems/{nqn}/allow-any", admin(s.setAllowAny))
	m.HandleFunc("PUT /v1/subsystems/{nqn}/ana", admin(s.setANA))

	if s.o.Metrics != nil {
		m.Handle("GET /metrics", read(s.o.Metrics.ServeHTTP))
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, code, msg string) {
	var b api.ErrorBody
	b.Error.Code, b.Error.Message = code, msg
	writeJSON(w, status, b)
}

func writeError(w http.ResponseWriter, err error) {
	st, code := classify(err)
	writeErr(w, st, code, err.Error())
}

// decode reads a JSON body into v, rejecting unknown fields.
func decode(r *http.Request, v any) error {
	d := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: body: %v", errBadRequest, err)
	}
	return nil
}

// origin is the node a write first arrived at (for "node" defaults).
func (s *Server) origin(r *http.Request) string {
	if o := r.Header.Get(originHeader); o != "" {
		return o
	}
	return s.o.Node.ID()
}

// write wraps a handler that must run on the leader. On a follower the
// request is forwarded (once) to the leader and its answer relayed; on the
// leader it runs locally, and when leadership moved away before the
// command was handed to raft (503 not_leader: nothing happened) it is
// retried, forwarded to the new leader, until Options.ForwardTimeout. A
// request that arrived forwarded is never forwarded again: its sender
// retries.
func (s *Server) write(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(fwdHeader) != "" {
			h(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			writeError(w, fmt.Errorf("%w: %v", errBadRequest, err))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.o.ForwardTimeout)
		defer cancel()
		delay := 10 * time.Millisecond
		for {
			var status int
			var resp []byte
			var hdr http.Header
			if s.o.Node.IsLeader() {
				bw := &bufferedWriter{hdr: http.Header{}}
				r.Body = io.NopCloser(bytes.NewReader(body))
				h(bw, r)
				status, resp, hdr = bw.status, bw.buf.Bytes(), bw.hdr
			} else {
				status, resp, err = s.forward(ctx, r.Method, r.URL.RequestURI(), s.origin(r), principal(r), body)
				if errors.Is(err, errSelfLeader) {
					continue
				}
				if err != nil {
					writeError(w, err)
					return
				}
			}
			if status == http.StatusServiceUnavailable && api.DecodeError(status, resp).Code == api.CodeNotLeader {
				select {
				case <-ctx.Done():
				case <-time.After(delay):
					delay = min(2*delay, 500*time.Millisecond)
					continue
				}
			}
			for k, v := range hdr {
				w.Header()[k] = v
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			w.Write(resp)
			return
		}
	}
}

// bufferedWriter holds a handler's answer so that write can decide to
// retry instead of relaying it.
type bufferedWriter struct {
	hdr    http.Header
	status int
	buf    bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.hdr }
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.buf.Write(p)
}
func (b *bufferedWriter) WriteHeader(st int) {
	if b.status == 0 {
		b.status = st
	}
}

var errSelfLeader = errors.New("this node became the leader")

// leaderAPI returns the API address of the current leader.
func (s *Server) leaderAPI() (string, bool, error) {
	id, _ := s.o.Node.Leader()
	if id == "" {
		return "", false, errNoLeader
	}
	if id == s.o.Node.ID() {
		return "", true, nil
	}
	var addr string
	s.o.Node.View(func(st *catalog.State) { addr = st.Nodes[id].APIAddr })
	if addr == "" {
		return "", false, fmt.Errorf("%w: leader %s has not registered its API address yet", errNoLeader, id)
	}
	return addr, false, nil
}

// identify adds this node's token (if any) to a request to another node.
func (s *Server) identify(req *http.Request) {
	if s.o.NodeToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.o.NodeToken)
	}
}

func (s *Server) scheme() string {
	if s.o.ClientTLS != nil {
		return "https"
	}
	return "http"
}

// forward sends the request to the leader, retrying while there is no
// leader or the leader changes, until ctx ends.
func (s *Server) forward(ctx context.Context, method, uri, origin string, caller Principal, body []byte) (int, []byte, error) {
	delay := 20 * time.Millisecond
	var last error
	for {
		addr, self, err := s.leaderAPI()
		if self {
			return 0, nil, errSelfLeader
		}
		if err == nil {
			st, resp, ferr := s.send(ctx, method, s.scheme()+"://"+addr+uri, origin, caller, body)
			if ferr == nil && st != http.StatusServiceUnavailable {
				return st, resp, nil
			}
			err = ferr
			if err == nil {
				err = fmt.Errorf("%w: leader %s answered 503: %s", errNoLeader, addr, bytes.TrimSpace(resp))
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("%w: %v", errNoLeader, last)
		case <-time.After(delay):
		}
		if delay < 500*time.Millisecond {
			delay *= 2
		}
	}
}

// send sends one forwarded request as this node, on behalf of caller
// (whose roles the receiving leader then applies).
func (s *Server) send(ctx context.Context, method, url, origin string, caller Principal, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(fwdHeader, s.o.Node.ID())
	req.Header.Set(originHeader, origin)
	req.Header.Set(callerRolesHeader, strconv.Itoa(int(caller.Roles)))
	req.Header.Set(callerNameHeader, caller.Name)
	s.identify(req)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode, b, err
}

// Propose applies c on the leader, wherever it is: locally when this
// node leads, else through the leader's /v1/internal/apply. It retries,
// with backoff, through elections, leadership loss and outcome-unknown
// answers until ctx ends, so c must be idempotent (the commands nodes
// propose are: registration, volume state, purge).
func (s *Server) Propose(ctx context.Context, c catalog.Command) (catalog.Result, error) {
	if c.V == 0 {
		c.V = c.Version()
	}
	body, _ := json.Marshal(api.ApplyRequest{Command: c})
	self := Principal{Name: "node:" + s.o.Node.ID(), Roles: RoleNode | RoleReader, NodeID: s.o.Node.ID()}
	delay := 10 * time.Millisecond
	for {
		res, err := s.proposeOnce(ctx, c, self, body)
		if !retryable(err) {
			return res, err
		}
		select {
		case <-ctx.Done():
			return res, err
		case <-time.After(delay):
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}

// applyLocal applies c on this node, the leader, for at most as long as
// ctx lasts: every apply of the server (a node's own proposal, a
// forwarded one, an API request) is bounded by its caller's context. Once raft has taken an entry its future ends only when the
// entry is applied or leadership or raft itself ends, and a leader that
// keeps its lease but cannot commit (a stalled replication pipeline) would
// hold the proposer — a volume's resync or fault report, and through it
// the volume's shutdown — for good (seen once in CI: 11 minutes in
// test/cluster's teardown). When ctx ends first the outcome is unknown:
// the entry may still commit, and an idempotent command may be proposed
// again. The apply goroutine ends with the future, at the latest when
// raft shuts down.
func (s *Server) applyLocal(ctx context.Context, c catalog.Command) (catalog.Result, error) {
	type applied struct {
		res catalog.Result
		err error
	}
	done := make(chan applied, 1)
	go func() {
		res, err := s.o.Node.Apply(c)
		done <- applied{res, err}
	}()
	select {
	case a := <-done:
		return a.res, a.err
	case <-ctx.Done():
		return catalog.Result{}, fmt.Errorf("%w: %s not known to be applied: %w", cluster.ErrOutcomeUnknown, c.Op, ctx.Err())
	}
}

// retryable: nothing happened (no leader, not the leader) or the outcome
// is unknown; an idempotent command may be sent again.
func retryable(err error) bool {
	return errors.Is(err, cluster.ErrNotLeader) || errors.Is(err, cluster.ErrOutcomeUnknown) ||
		errors.Is(err, api.ErrNotLeader) || errors.Is(err, api.ErrOutcomeUnknown) || errors.Is(err, errSelfLeader)
}

func (s *Server) proposeOnce(ctx context.Context, c catalog.Command, self Principal, body []byte) (catalog.Result, error) {
	if s.o.Node.IsLeader() {
		return s.applyLocal(ctx, c)
	}
	st, resp, err := s.forward(ctx, http.MethodPost, "/v1/internal/apply", s.o.Node.ID(), self, body)
	if err != nil {
		return catalog.Result{}, err
	}
	if st != http.StatusOK {
		return catalog.Result{}, api.DecodeError(st, resp)
	}
	var res catalog.Result
	if err := json.Unmarshal(resp, &res); err != nil {
		return catalog.Result{}, fmt.Errorf("api: apply response: %w", err)
	}
	return res, nil
}
