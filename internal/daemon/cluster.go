package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"

	"github.com/rdmablk/rdmablk/cluster/agent"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
)

// startCluster starts the cluster member next to the target (cluster
// mode). The listeners are already registered as target ports.
func startCluster(cfg *Config, tgt *target.Target, disc *reconcile.Discovery, provider verbs.Provider, log *slog.Logger) (*agent.Agent, error) {
	cc := cfg.Cluster
	dir := clusterDir(cfg)
	var srvTLS, cliTLS *tls.Config
	if cc.TLS.CertFile != "" {
		var err error
		if srvTLS, err = server.ServerTLS(cc.TLS.CertFile, cc.TLS.KeyFile, cc.TLS.ClientCAFile); err != nil {
			return nil, err
		}
		if cliTLS, err = api.ClientTLS(cc.TLS.CAFile, cc.TLS.CertFile, cc.TLS.KeyFile); err != nil {
			return nil, err
		}
	}
	var tokens []server.TokenEntry
	if cc.Auth.TokensFile != "" {
		var err error
		if tokens, err = server.LoadTokens(cc.Auth.TokensFile); err != nil {
			return nil, fmt.Errorf("cluster.auth.tokens_file: %w", err)
		}
	}
	var nodeToken string
	if cc.Auth.NodeTokenFile != "" {
		var err error
		if nodeToken, err = agent.NodeToken(cc.Auth.NodeTokenFile, cc.Bootstrap, log); err != nil {
			return nil, fmt.Errorf("cluster.auth.node_token_file: %w", err)
		}
	}
	a, err := agent.Start(agent.Config{
		NodeID: cc.NodeID, DataDir: dir,
		RaftBind: cc.RaftBind, RaftAdvertise: cc.RaftAdvertise,
		APIBind: cc.APIBind, APIAdvertise: cc.APIAdvertise,
		Bootstrap: cc.Bootstrap, Join: cc.Join,
		ServerTLS: srvTLS, ClientTLS: cliTLS,
		Tokens: tokens, NodeToken: nodeToken, Insecure: cc.Auth.Insecure,
		HeartbeatTimeout: cc.Raft.HeartbeatTimeout, ElectionTimeout: cc.Raft.ElectionTimeout,
		LeaderLeaseTimeout: cc.Raft.LeaderLeaseTimeout, ApplyTimeout: cc.Raft.ApplyTimeout,
		CommitTimeout:     cc.Raft.CommitTimeout,
		SnapshotThreshold: cc.Raft.SnapshotThreshold, RaftLogLevel: cc.Raft.LogLevel,
		Target: tgt, Discovery: disc, Resync: cc.Resync, Logger: log,
		Failover:              server.WatchOptions{Interval: cc.Failover.Interval, Grace: cc.Failover.Grace, RefusedGrace: cc.Failover.RefusedGrace},
		RebuildBytesPerSecond: cc.Replication.RebuildBytesPerSecond,
		OpenLeg:               replicaLegOpener(provider, cc.Replication.Transport, cc.Replication.TCPZeroCopySendMin, log),
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	self := a.Self()
	log.Info("cluster ready", "node", self.ID, "api_addr", self.APIAddr, "raft_addr", self.RaftAddr, "data_dir", dir)
	return a, nil
}
