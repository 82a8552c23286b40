package daemon

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/rdmablk/rdmablk/cluster/agent"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/api/server"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/target"
)

// startCluster starts the cluster member next to the target (cluster
// mode). The listeners are already registered as target ports.
func startCluster(cfg *Config, tgt *target.Target, disc *reconcile.Discovery, log *slog.Logger) (*agent.Agent, error) {
	cc := cfg.Cluster
	dir := cc.DataDir
	if dir == "" {
		dir = filepath.Join(cfg.DataDir, "cluster")
	}
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
	a, err := agent.Start(agent.Config{
		NodeID: cc.NodeID, DataDir: dir,
		RaftBind: cc.RaftBind, RaftAdvertise: cc.RaftAdvertise,
		APIBind: cc.APIBind, APIAdvertise: cc.APIAdvertise,
		Bootstrap: cc.Bootstrap, Join: cc.Join,
		ServerTLS: srvTLS, ClientTLS: cliTLS,
		HeartbeatTimeout: cc.Raft.HeartbeatTimeout, ElectionTimeout: cc.Raft.ElectionTimeout,
		SnapshotThreshold: cc.Raft.SnapshotThreshold, RaftLogLevel: cc.Raft.LogLevel,
		Target: tgt, Discovery: disc, Resync: cc.Resync, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	self := a.Self()
	log.Info("cluster ready", "node", self.ID, "api_addr", self.APIAddr, "raft_addr", self.RaftAddr, "data_dir", dir)
	return a, nil
}
