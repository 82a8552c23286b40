package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/metrics"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/target"
)

// Config configures a member.
type Config struct {
	NodeID  string
	DataDir string
	// RaftBind / RaftAdvertise: see cluster.Config.
	RaftBind, RaftAdvertise string
	// APIBind is the control API's listen address (default
	// 127.0.0.1:7420); APIAdvertise what other nodes dial ("" = the bound
	// address, which must then not be unspecified).
	APIBind, APIAdvertise string
	// Bootstrap founds a new cluster (first node, first start only).
	Bootstrap bool
	// Join lists API addresses of existing members; the node asks them to
	// add it (idempotent, so it is safe to keep on restarts).
	Join []string
	// ServerTLS enables HTTPS on the API (client certificates as it says);
	// ClientTLS is used to reach other nodes' APIs (forwarding, join).
	// With both set and ServerTLS requiring client certificates, raft
	// runs over mutual TLS too (on StreamLayer when that is set).
	ServerTLS, ClientTLS *tls.Config

	// Tokens are the API's bearer tokens (hashed; server.LoadTokens).
	Tokens []server.TokenEntry
	// NodeToken is the cluster's node token (plain): this node presents
	// it to other nodes and accepts it as the node role. Nodes without
	// node certificates need it to join and to report to the leader.
	NodeToken string
	// Insecure allows an API bound to a non-loopback address without TLS
	// and client identities, and gives every caller every role. Logged
	// as a warning; never for production.
	Insecure bool

	// Raft tuning, as in cluster.Config (zero = defaults).
	HeartbeatTimeout, ElectionTimeout time.Duration
	LeaderLeaseTimeout, ApplyTimeout  time.Duration
	CommitTimeout                     time.Duration
	SnapshotThreshold, TrailingLogs   uint64
	SnapshotInterval                  time.Duration
	RaftLogLevel                      string
	// StreamLayer: see cluster.Config (tests).
	StreamLayer raft.StreamLayer

	Target    *target.Target
	Discovery *reconcile.Discovery // nil: no cross-node discovery entries
	Resync    time.Duration
	// Failover tunes the automatic failover policy
	// (server.RunFailoverWatch), which every member runs and which acts
	// only while the member leads; zero values are its defaults.
	Failover server.WatchOptions
	// Replication configures the data path of replicated volumes
	// (reconcile.Options.OpenLeg, RebuildBytesPerSecond).
	OpenLeg               reconcile.LegOpener
	RebuildBytesPerSecond int64
	// OpenVolume opens backing files (nil: blockdev/file defaults; tests).
	OpenVolume reconcile.OpenFunc
	// Logger receives the member's log; the agent adds the "node" key
	// (so Logger must not carry one).
	Logger *slog.Logger
}

// Agent is a running member.
type Agent struct {
	cfg        Config
	log        *slog.Logger
	Node       *cluster.Node
	API        *server.Server
	Metrics    *metrics.Metrics
	Reconciler *reconcile.Reconciler
	listener   *server.Listener
	self       catalog.Node

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// Start opens the raft node, serves the API, and starts the reconciler
// and the join / registration loop. It does not wait for a leader.
func Start(cfg Config) (a *Agent, err error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Target == nil {
		return nil, fmt.Errorf("%w: agent needs a target", cluster.ErrBadConfig)
	}
	if cfg.APIBind == "" {
		cfg.APIBind = "127.0.0.1:7420"
	}
	a = &Agent{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeID), Metrics: metrics.New()}
	// Refuse an exposure nobody asked for before anything is opened.
	auth, err := apiAuth(cfg, a.log)
	if err != nil {
		return nil, err
	}
	self := a // the error returns below set a to nil
	defer func() {
		if err != nil {
			self.Stop()
		}
	}()
	layer := cfg.StreamLayer
	if raftTLS(cfg) {
		if layer == nil {
			if layer, err = cluster.TCPLayer(cfg.RaftBind, cfg.RaftAdvertise); err != nil {
				return nil, fmt.Errorf("cluster: raft listen %s: %w", cfg.RaftBind, err)
			}
			own := layer
			defer func() {
				if err != nil && a == nil { // raft never took it over
					own.Close()
				}
			}()
		}
		if layer, err = cluster.TLSLayer(layer, cfg.ServerTLS, cfg.ClientTLS); err != nil {
			return nil, err
		}
		a.log.Info("raft transport over mutual TLS (node certificates)")
	}
	a.Node, err = cluster.Open(cluster.Config{
		ID: cfg.NodeID, Dir: filepath.Join(cfg.DataDir, "raft"),
		RaftBind: cfg.RaftBind, RaftAdvertise: cfg.RaftAdvertise, Bootstrap: cfg.Bootstrap,
		StreamLayer:      layer,
		HeartbeatTimeout: cfg.HeartbeatTimeout, ElectionTimeout: cfg.ElectionTimeout,
		LeaderLeaseTimeout: cfg.LeaderLeaseTimeout, ApplyTimeout: cfg.ApplyTimeout,
		CommitTimeout:     cfg.CommitTimeout,
		SnapshotThreshold: cfg.SnapshotThreshold, TrailingLogs: cfg.TrailingLogs,
		SnapshotInterval: cfg.SnapshotInterval,
		Logger:           a.log, RaftLogLevel: cfg.RaftLogLevel,
	})
	if err != nil {
		return nil, err
	}
	a.Metrics.WatchRaft(a.Node)
	a.Metrics.WatchTarget(cfg.Target)
	a.API = server.New(server.Options{Node: a.Node, Metrics: a.Metrics.Handler(), ClientTLS: cfg.ClientTLS,
		Auth: auth, NodeToken: cfg.NodeToken, Logger: a.log})
	a.listener, err = server.Listen(cfg.APIBind, cfg.ServerTLS, a.API, a.log)
	if err != nil {
		return nil, fmt.Errorf("api listen %s: %w", cfg.APIBind, err)
	}
	apiAddr := cfg.APIAdvertise
	if apiAddr == "" {
		apiAddr = a.listener.Addr()
		if h, _, _ := net.SplitHostPort(apiAddr); net.ParseIP(h).IsUnspecified() {
			return nil, fmt.Errorf("%w: api bind %s is unspecified: set the API advertise address", cluster.ErrBadConfig, cfg.APIBind)
		}
	}
	volDir := filepath.Join(cfg.DataDir, "volumes")
	if err := os.MkdirAll(volDir, 0o750); err != nil {
		return nil, fmt.Errorf("cluster: volume directory: %w", err)
	}
	a.self = catalog.Node{ID: cfg.NodeID, APIAddr: apiAddr, RaftAddr: a.Node.RaftAddr(), VolumeFSBytes: filesystemBytes(volDir)}
	for _, p := range cfg.Target.Ports() {
		a.self.Listeners = append(a.self.Listeners, catalog.Listener{
			PortID: p.ID, TrType: p.TrType, AdrFam: p.AdrFam, TrAddr: p.TrAddr, TrSvcID: p.TrSvcID,
			TSAS: reconcile.EncodeTSAS(p.TSAS),
		})
	}
	a.Reconciler = reconcile.New(reconcile.Options{
		NodeID: cfg.NodeID, VolumeDir: volDir,
		Target: cfg.Target, Catalog: a.Node, Proposer: a.API, Metrics: a.Metrics,
		Logger: a.log, Resync: cfg.Resync,
		OpenLeg: cfg.OpenLeg, RebuildBytesPerSecond: cfg.RebuildBytesPerSecond, Open: cfg.OpenVolume,
	})
	if cfg.Discovery != nil {
		cfg.Discovery.SetCatalog(a.Node)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(3)
	go func() { defer a.wg.Done(); a.Reconciler.Run(ctx) }()
	go func() { defer a.wg.Done(); a.API.RunFailoverWatch(ctx, cfg.Failover) }()
	go func() { defer a.wg.Done(); a.announce(ctx) }()
	a.log.Info("cluster node started", "api_addr", apiAddr, "raft_addr", a.self.RaftAddr,
		"bootstrap", cfg.Bootstrap, "join", cfg.Join)
	return a, nil
}

// raftTLS reports whether raft runs over mutual TLS: the API requires
// client certificates and this node has one to present.
func raftTLS(cfg Config) bool {
	return cfg.ServerTLS != nil && cfg.ServerTLS.ClientAuth == tls.RequireAndVerifyClientCert &&
		cfg.ClientTLS != nil && len(cfg.ClientTLS.Certificates) > 0
}

// apiAuth builds the API's authorisation from cfg and refuses exposures
// nobody asked for: a non-loopback API without TLS, or one where anyone
// who reaches it would be admin.
func apiAuth(cfg Config, log *slog.Logger) (*server.Auth, error) {
	tokens := slices.Clone(cfg.Tokens)
	if cfg.NodeToken != "" {
		var e server.TokenEntry
		e.Role, e.Name = server.RoleNode|server.RoleReader, "cluster-node-token"
		e.Hash = sha256.Sum256([]byte(cfg.NodeToken))
		tokens = append(tokens, e)
	}
	certs := cfg.ServerTLS != nil && cfg.ServerTLS.ClientAuth == tls.RequireAndVerifyClientCert
	open := server.RoleNone
	if !certs && len(cfg.Tokens) == 0 {
		open = server.RoleReader | server.RoleAdmin // no admin identities: whoever reaches the API
	}
	loopback := isLoopback(cfg.APIBind)
	switch {
	case cfg.Insecure:
		log.Warn("INSECURE: cluster API accepts every request from anyone who reaches it (cluster.auth.insecure); never use this outside a test network",
			"api_bind", cfg.APIBind, "tls", cfg.ServerTLS != nil)
		return server.NewAuth(tokens, server.RoleAll), nil
	case !loopback && cfg.ServerTLS == nil:
		return nil, fmt.Errorf("%w: api bind %s is not a loopback address and the API has no TLS: configure cluster.tls (cert_file, key_file, client_ca_file) or set cluster.auth.insecure to accept the exposure", cluster.ErrBadConfig, cfg.APIBind)
	case !loopback && open&server.RoleAdmin != 0:
		return nil, fmt.Errorf("%w: api bind %s is not a loopback address and no admin identity is configured (client certificates via cluster.tls.client_ca_file, or admin tokens via cluster.auth.tokens_file): anyone reaching it would be admin; configure one or set cluster.auth.insecure", cluster.ErrBadConfig, cfg.APIBind)
	}
	if !certs && cfg.NodeToken == "" && (len(cfg.Join) > 0 || !cfg.Bootstrap) {
		log.Warn("cluster node has no node identity (no node certificate, no cluster.auth.node_token_file): it cannot join or report to other nodes")
	}
	return server.NewAuth(tokens, open), nil
}

// isLoopback reports whether a bind address is loopback only.
func isLoopback(bind string) bool {
	h, _, err := net.SplitHostPort(bind)
	if err != nil {
		return false
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// APIAddr returns the advertised API address.
func (a *Agent) APIAddr() string { return a.self.APIAddr }

// Self returns the node as it registers itself in the catalogue.
func (a *Agent) Self() catalog.Node { return a.self }

// announce joins through the seeds (if any) and makes sure the
// catalogue's entry for this node is current. It retries until it
// succeeds or ctx ends.
func (a *Agent) announce(ctx context.Context) {
	delay := 50 * time.Millisecond
	wait := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(delay):
		}
		if delay < 2*time.Second {
			delay *= 2
		}
		return true
	}
	if len(a.cfg.Join) > 0 && !a.member() {
		for joined := false; !joined; {
			for _, seed := range a.cfg.Join {
				c := api.NewClient(seed, a.cfg.ClientTLS)
				c.SetToken(a.cfg.NodeToken)
				cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				err := c.Join(cctx, a.self)
				cancel()
				c.Close()
				if err == nil {
					a.log.Info("joined cluster", "via", seed)
					joined = true
					break
				}
				a.log.Debug("join attempt failed", "seed", seed, "err", err)
			}
			if !joined && !wait() {
				return
			}
		}
	}
	for {
		var cur catalog.Node
		var ok bool
		a.Node.View(func(st *catalog.State) { cur, ok = st.Nodes[a.self.ID] })
		if ok && sameNode(cur, a.self) {
			a.log.Info("cluster node registered", "api_addr", a.self.APIAddr, "raft_addr", a.self.RaftAddr)
			return
		}
		self := a.self
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, err := a.API.Propose(cctx, catalog.Command{Op: catalog.OpRegisterNode, Node: &self})
		cancel()
		if err != nil {
			a.log.Debug("registration failed", "err", err)
			if !wait() {
				return
			}
		}
	}
}

// member reports whether this node's raft configuration already lists it
// with its current address alongside others (a restart).
func (a *Agent) member() bool {
	st := a.Node.Status()
	for _, m := range st.Members {
		if m.ID == a.self.ID && m.RaftAddr == a.self.RaftAddr && len(st.Members) > 1 {
			return true
		}
	}
	return false
}

func sameNode(a, b catalog.Node) bool {
	return a.ID == b.ID && a.APIAddr == b.APIAddr && a.RaftAddr == b.RaftAddr && a.VolumeFSBytes == b.VolumeFSBytes &&
		slices.Equal(a.Listeners, b.Listeners)
}

// Stop ends the reconciler, failover watch and registration loops, the
// API listener and raft. The target and the volumes stay as they are. Idempotent.
func (a *Agent) Stop() error {
	var errs []error
	a.stopOnce.Do(func() {
		if a.cancel != nil {
			a.cancel()
		}
		a.wg.Wait()
		if a.listener != nil {
			errs = append(errs, a.listener.Close())
		}
		if a.Node != nil {
			errs = append(errs, a.Node.Close())
		}
	})
	return errors.Join(errs...)
}

// CloseVolumes closes the backends the reconciler opened. Call it after
// the target was closed.
func (a *Agent) CloseVolumes() error {
	if a.Reconciler == nil {
		return nil
	}
	return a.Reconciler.Close()
}
