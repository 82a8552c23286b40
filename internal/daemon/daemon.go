package daemon

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/cluster/agent"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// Daemon is a running rdmablkd: target core, listeners and backends.
type Daemon struct {
	log       *slog.Logger
	provider  verbs.Provider
	tgt       *target.Target
	listeners []*rdma.Listener
	backends  []blockdev.Backend
	member    *agent.Agent // nil unless cluster.enabled
}

// Start opens the volumes, builds the target and starts listening. On
// error everything opened so far is closed again.
func Start(cfg *Config, log *slog.Logger) (d *Daemon, err error) {
	d = &Daemon{log: log}
	defer func() {
		if err != nil {
			d.Close()
			d = nil
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	addrs := make([]string, len(cfg.Listeners))
	for i, l := range cfg.Listeners {
		addrs[i] = l.Addr
	}
	p, reason, err := providers.Open(cfg.Transport.Provider, cfg.Transport.Profile, addrs)
	if err != nil {
		return nil, err
	}
	d.provider = p
	log.Info("verbs provider", "provider", p.Name(), "profile", cfg.Transport.Profile, "why", reason)

	var disc *reconcile.Discovery
	topts := target.Options{
		Logger:      log,
		Workers:     cfg.Target.Workers,
		MaxIOQueues: cfg.Target.MaxIOQueues,
	}
	if cfg.Cluster.Enabled {
		disc = reconcile.NewDiscovery(cfg.Cluster.NodeID)
		topts.Discovery = disc
	}
	d.tgt = target.New(topts)

	vols := map[string]blockdev.Backend{}
	for _, vc := range cfg.Volumes {
		b, err := openVolume(cfg.DataDir, vc)
		if err != nil {
			return nil, err
		}
		d.backends = append(d.backends, b)
		vols[vc.Name] = b
		log.Info("volume", "name", vc.Name, "path", volumePath(cfg.DataDir, vc.Path),
			"bytes", int64(b.Blocks())*int64(b.BlockSize()), "block_size", b.BlockSize())
	}
	for _, sc := range cfg.Subsystems {
		ssc := target.SubsystemConfig{
			NQN: sc.NQN, Serial: sc.Serial, Model: sc.Model,
			AllowAnyHost: sc.AllowAnyHost, Hosts: sc.Hosts,
		}
		for _, ns := range sc.Namespaces {
			id := volumeID(sc.NQN, ns.Volume)
			ssc.Namespaces = append(ssc.Namespaces, target.NamespaceConfig{
				NSID: ns.NSID, Backend: vols[ns.Volume], UUID: id, NGUID: id,
			})
		}
		if _, err := d.tgt.AddSubsystem(ssc); err != nil {
			return nil, fmt.Errorf("subsystem %s: %w", sc.NQN, err)
		}
		log.Info("subsystem", "nqn", sc.NQN, "namespaces", len(sc.Namespaces), "allow_any_host", sc.AllowAnyHost)
	}
	for i, lc := range cfg.Listeners {
		l, err := rdma.Listen(rdma.Config{
			Provider:           p,
			Target:             d.tgt,
			Addr:               lc.Addr,
			PortID:             uint16(i + 1),
			InCapsuleDataSize:  cfg.Transport.InCapsuleDataSize,
			MaxDataTransfer:    cfg.Transport.MaxDataTransfer,
			MaxQueueDepth:      cfg.Transport.MaxQueueDepth,
			PollSpins:          cfg.Transport.PollSpins,
			SendWithInvalidate: cfg.Transport.SendWithInvalidate,
			Logger:             log,
		})
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", lc.Addr, err)
		}
		d.listeners = append(d.listeners, l)
		log.Info("listening", "transport", "rdma", "addr", l.Addr(), "port_id", i+1)
	}
	if cfg.Cluster.Enabled {
		if d.member, err = startCluster(cfg, d.tgt, disc, log); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// Cluster returns the cluster member, nil when cluster mode is off.
func (d *Daemon) Cluster() *agent.Agent { return d.member }

// Addrs returns the actual listen addresses.
func (d *Daemon) Addrs() []string {
	out := make([]string, len(d.listeners))
	for i, l := range d.listeners {
		out[i] = l.Addr()
	}
	return out
}

// Target exposes the target core (for tests and the control plane).
func (d *Daemon) Target() *target.Target { return d.tgt }

// Close drains and stops everything: listeners first (every in-flight
// command completes and its response is sent, or its connection is
// dead), then the target, then the backends (flushed and closed).
func (d *Daemon) Close() error {
	var errs []error
	if d.member != nil {
		errs = append(errs, d.member.Stop())
	}
	for _, l := range d.listeners {
		errs = append(errs, l.Close())
	}
	d.listeners = nil
	if d.tgt != nil {
		errs = append(errs, d.tgt.Close())
		d.tgt = nil
	}
	for _, b := range d.backends {
		errs = append(errs, b.Close())
	}
	d.backends = nil
	if d.member != nil {
		errs = append(errs, d.member.CloseVolumes())
		d.member = nil
	}
	return errors.Join(errs...)
}

func volumePath(dataDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dataDir, p)
}

func openVolume(dataDir string, vc VolumeConfig) (blockdev.Backend, error) {
	var size int64
	if vc.Size != "" {
		s, err := catalog.ParseSize(vc.Size)
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", vc.Name, err)
		}
		size = s
	}
	b, err := file.Open(volumePath(dataDir, vc.Path), file.Options{
		Size: size, BlockSize: vc.BlockSize, ReadOnly: vc.ReadOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", vc.Name, err)
	}
	return b, nil
}

// volumeID derives a stable 16-byte namespace identifier (NGUID / UUID)
// from the subsystem and volume names, so that hosts see the same
// identity across daemon restarts.
func volumeID(nqn, volume string) [16]byte {
	sum := sha256.Sum256([]byte(nqn + "\x00" + volume))
	var id [16]byte
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x80 // UUID version 8 (custom), RFC 9562
	id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
	return id
}
