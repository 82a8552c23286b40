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
	Logger         *slog.Logger
}

// Server is the HTTP handler of one node's control API.
type Server struct {
	o    Options
	mux  *http.ServeMux
	http *http.Client
}

const (
	fwdHeader    = "X-Rdmablk-Forwarded"
	originHeader = "X-Rdmablk-Origin-Node"
	maxBody      = 1 << 20
)

// New builds the handler.
func New(o Options) *Server {
	if o.ForwardTimeout == 0 {
		o.ForwardTimeout = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tr := &http.Transport{TLSClientConfig: o.ClientTLS, MaxIdleConnsPerHost: 16}
	s := &Server{o: o, mux: http.NewServeMux(), http: &http.Client{Transport: tr}}
	s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/cluster/status", s.status)
	m.HandleFunc("POST /v1/cluster/join", s.write(s.join))
	m.HandleFunc("POST /v1/cluster/remove", s.write(s.remove))
	m.HandleFunc("POST /v1/cluster/snapshot", s.snapshot)
	m.HandleFunc("POST /v1/internal/apply", s.write(s.internalApply))

	m.HandleFunc("GET /v1/volumes", s.listVolumes)
	m.HandleFunc("POST /v1/volumes", s.write(s.createVolume))
	m.HandleFunc("GET /v1/volumes/{name}", s.getVolume)
	m.HandleFunc("POST /v1/volumes/{name}/resize", s.write(s.resizeVolume))
	m.HandleFunc("DELETE /v1/volumes/{name}", s.write(s.deleteVolume))

	m.HandleFunc("GET /v1/subsystems", s.listSubsystems)
	m.HandleFunc("POST /v1/subsystems", s.write(s.createSubsystem))
	m.HandleFunc("GET /v1/subsystems/{nqn}", s.getSubsystem)
	m.HandleFunc("DELETE /v1/subsystems/{nqn}", s.write(s.deleteSubsystem))
	m.HandleFunc("POST /v1/subsystems/{nqn}/namespaces", s.write(s.addNamespace))
	m.HandleFunc("DELETE /v1/subsystems/{nqn}/namespaces/{nsid}", s.write(s.removeNamespace))
	m.HandleFunc("POST /v1/subsystems/{nqn}/hosts", s.write(s.addHost))
	m.HandleFunc("DELETE /v1/subsystems/{nqn}/hosts/{host}", s.write(s.removeHost))
	m.HandleFunc("PUT /v1/subsystems/{nqn}/allow-any", s.write(s.setAllowAny))
	m.HandleFunc("PUT /v1/subsystems/{nqn}/ana", s.write(s.setANA))

	if s.o.Metrics != nil {
		m.Handle("GET /metrics", s.o.Metrics)
	}
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeErr(w, http.StatusNotFound, api.CodeNotFound, "no such endpoint: "+r.Method+" "+r.URL.Path)
	})
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

// write wraps a handler that must run on the leader: on a follower the
// request is forwarded (once) to the leader and its answer relayed.
func (s *Server) write(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.o.Node.IsLeader() || r.Header.Get(fwdHeader) != "" {
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
		status, resp, err := s.forward(ctx, r.Method, r.URL.RequestURI(), s.origin(r), body)
		if errors.Is(err, errSelfLeader) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h(w, r)
			return
		}
		if err != nil {
			writeError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(resp)
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

func (s *Server) scheme() string {
	if s.o.ClientTLS != nil {
		return "https"
	}
	return "http"
}

// forward sends the request to the leader, retrying while there is no
// leader or the leader changes, until ctx ends.
func (s *Server) forward(ctx context.Context, method, uri, origin string, body []byte) (int, []byte, error) {
	delay := 20 * time.Millisecond
	var last error
	for {
		addr, self, err := s.leaderAPI()
		if self {
			return 0, nil, errSelfLeader
		}
		if err == nil {
			st, resp, ferr := s.send(ctx, method, s.scheme()+"://"+addr+uri, origin, body)
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

func (s *Server) send(ctx context.Context, method, url, origin string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set(fwdHeader, s.o.Node.ID())
	req.Header.Set(originHeader, origin)
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
// node leads, else through the leader's /v1/internal/apply. It retries
// through elections until ctx ends.
func (s *Server) Propose(ctx context.Context, c catalog.Command) (catalog.Result, error) {
	if c.V == 0 {
		c.V = catalog.CommandVersion
	}
	for {
		if s.o.Node.IsLeader() {
			res, err := s.o.Node.Apply(c)
			if !errors.Is(err, cluster.ErrNotLeader) {
				return res, err
			}
		}
		body, _ := json.Marshal(api.ApplyRequest{Command: c})
		st, resp, err := s.forward(ctx, http.MethodPost, "/v1/internal/apply", s.o.Node.ID(), body)
		if errors.Is(err, errSelfLeader) {
			continue
		}
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
}
