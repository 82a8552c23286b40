package daemon

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/rdmablk/rdmablk/blockdev"
	"github.com/rdmablk/rdmablk/blockdev/file"
	"github.com/rdmablk/rdmablk/cluster/agent"
	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/cluster/reconcile"
	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/target/tcp"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/providers"
)

// Daemon is a running rdmablkd: target core, listeners and backends.
type Daemon struct {
	log       *slog.Logger
	provider  verbs.Provider
	tgt       *target.Target
	listeners []*rdma.Listener
	// tcpListeners are the NVMe/TCP listeners; addrs lists every
	// listener's Addr in config order.
	tcpListeners []*tcp.Listener
	addrs        []func() string
	backends     []blockdev.Backend
	member       *agent.Agent   // nil unless cluster.enabled
	metrics      *metricsServer // nil unless metrics.listen (standalone)
	transcript   *os.File       // target.dhchap_transcript, nil when off
	// created are the volume files this start created (removed again if
	// the start fails: they hold nothing yet).
	created []string
	// cntlid is the target's first controller ID and where it came from
	// (cntlid.go); stopCNTLID stops the range watch (nil when none runs).
	cntlid     cntlidChoice
	stopCNTLID func()
}

// Start opens the volumes, builds the target and starts listening. On
// error everything opened so far is closed again (backends flushed and
// closed) and the error names the setting that caused it.
func Start(cfg *Config, log *slog.Logger) (*Daemon, error) {
	d := &Daemon{log: log}
	if cfg.Transport.TCPPollSpins > 0 {
		// NVMe/TCP readers will spin: the descriptors opened before the
		// listeners (the volumes' rings) must join the parked set too.
		nbsys.UseParked()
	}
	if err := d.start(cfg); err != nil {
		if cerr := d.Close(); cerr != nil {
			log.Warn("start-up failed; closing what was opened", "err", cerr)
		}
		for _, p := range d.created {
			if rerr := os.Remove(p); rerr != nil {
				log.Warn("start-up failed; removing a volume file it created", "path", p, "err", rerr)
			}
		}
		return nil, err
	}
	d.created = nil
	return d, nil
}

// start does Start's work on d; what it opened is in d for Close.
func (d *Daemon) start(cfg *Config) error {
	log := d.log
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data_dir %q (--data-dir): %w", cfg.DataDir, unwrapPath(err))
	}
	var addrs []string // RDMA listeners' (the provider is chosen by them)
	for _, l := range cfg.Listeners {
		if !l.isTCP() {
			addrs = append(addrs, l.Addr)
		}
	}
	p, reason, err := providers.Open(cfg.Transport.Provider, cfg.Transport.Profile, addrs)
	if err != nil {
		return fmt.Errorf("transport.provider %q (--provider): %w", cfg.Transport.Provider, err)
	}
	d.provider = p
	log.Info("verbs provider", "provider", p.Name(), "profile", cfg.Transport.Profile, "why", reason)

	var disc *reconcile.Discovery
	topts := target.Options{
		Logger:      log,
		Workers:     cfg.Target.Workers,
		MaxIOQueues: cfg.Target.MaxIOQueues,
	}
	if p := cfg.Target.DHCHAPTranscript; p != "" {
		hook, f, err := transcriptWriter(p, log)
		if err != nil {
			return err
		}
		d.transcript, topts.AuthTranscript = f, hook
	}
	if cfg.Cluster.Enabled {
		disc = reconcile.NewDiscovery(cfg.Cluster.NodeID)
		topts.Discovery = disc
	}
	d.cntlid = chooseFirstCNTLID(cfg, log)
	topts.FirstCNTLID = d.cntlid.first
	if _, last, ok := catalog.CNTLIDRange(d.cntlid.index); ok {
		topts.LastCNTLID = last
	}
	d.tgt = target.New(topts)

	vols := map[string]blockdev.Backend{}
	for i, vc := range cfg.Volumes {
		path := volumePath(cfg.DataDir, vc.Path)
		_, statErr := os.Stat(path)
		b, err := openVolume(cfg.DataDir, vc)
		if err != nil {
			return fmt.Errorf("volumes[%d] %q: path %q: %w", i, vc.Name, path, err)
		}
		if errors.Is(statErr, fs.ErrNotExist) {
			d.created = append(d.created, path)
		}
		d.backends = append(d.backends, b)
		vols[vc.Name] = b
		log.Info("volume", "name", vc.Name, "path", volumePath(cfg.DataDir, vc.Path),
			"bytes", int64(b.Blocks())*int64(b.BlockSize()), "block_size", b.BlockSize())
	}
	for _, sc := range cfg.Subsystems {
		hosts, auths, err := sc.targetHosts()
		if err != nil {
			return fmt.Errorf("subsystems: %s: %w", sc.NQN, err)
		}
		ssc := target.SubsystemConfig{
			NQN: sc.NQN, Serial: sc.Serial, Model: sc.Model,
			AllowAnyHost: sc.AllowAnyHost, Hosts: hosts,
			HostAuth: auths, RequireAuth: sc.DHCHAPRequired,
		}
		for _, ns := range sc.Namespaces {
			id := volumeID(sc.NQN, ns.Volume)
			ssc.Namespaces = append(ssc.Namespaces, target.NamespaceConfig{
				NSID: ns.NSID, Backend: vols[ns.Volume], UUID: id, NGUID: id,
			})
		}
		if _, err := d.tgt.AddSubsystem(ssc); err != nil {
			return fmt.Errorf("subsystems: %s: %w", sc.NQN, err)
		}
		log.Info("subsystem", "nqn", sc.NQN, "namespaces", len(sc.Namespaces), "allow_any_host", sc.AllowAnyHost,
			"dhchap_hosts", len(auths), "dhchap_required", sc.DHCHAPRequired)
	}
	bufLimit, _ := cfg.Transport.dataBufferLimit() // validated by Load
	for i, lc := range cfg.Listeners {
		if lc.isTCP() {
			l, err := tcp.Listen(tcp.Config{
				Target:                d.tgt,
				Addr:                  lc.Addr,
				PortID:                uint16(i + 1),
				InCapsuleDataSize:     cfg.Transport.InCapsuleDataSize,
				MaxDataTransfer:       cfg.Transport.MaxDataTransfer,
				MaxQueueDepth:         cfg.Transport.MaxQueueDepth,
				ConnectTimeout:        cfg.Transport.ConnectTimeout,
				MaxUnconnected:        cfg.Transport.MaxUnconnectedQueues,
				MaxUnconnectedPerHost: cfg.Transport.MaxUnconnectedPerHost,
				ZeroCopySendMin:       cfg.Transport.TCPZeroCopySendMin,
				PollSpins:             cfg.Transport.TCPPollSpins,
				Logger:                log,
			})
			if err != nil {
				return fmt.Errorf("listeners[%d].addr %q (--listen): %w", i, lc.Addr, listenCause(err))
			}
			d.tcpListeners = append(d.tcpListeners, l)
			d.addrs = append(d.addrs, l.Addr)
			log.Info("listening", "transport", "tcp", "addr", l.Addr(), "port_id", i+1)
			continue
		}
		l, err := rdma.Listen(rdma.Config{
			Provider:              p,
			Target:                d.tgt,
			Addr:                  lc.Addr,
			PortID:                uint16(i + 1),
			InCapsuleDataSize:     cfg.Transport.InCapsuleDataSize,
			MaxDataTransfer:       cfg.Transport.MaxDataTransfer,
			MaxQueueDepth:         cfg.Transport.MaxQueueDepth,
			PollSpins:             cfg.Transport.PollSpins,
			PollQuietAfter:        cfg.Transport.PollQuietAfter,
			PollClean:             cfg.Transport.PollClean,
			SendWithInvalidate:    cfg.Transport.SendWithInvalidate,
			ConnectTimeout:        cfg.Transport.ConnectTimeout,
			MaxUnconnectedQueues:  cfg.Transport.MaxUnconnectedQueues,
			MaxUnconnectedPerHost: cfg.Transport.MaxUnconnectedPerHost,
			MaxDataBufferBytes:    bufLimit,
			PollGroups:            cfg.Transport.PollGroups,
			LockPollerThreads:     cfg.Transport.LockPollerThreads,
			PollWait:              cfg.Transport.PollWait,
			Logger:                log,
		})
		if err != nil {
			return fmt.Errorf("listeners[%d].addr %q (--listen): %w", i, lc.Addr, listenCause(err))
		}
		d.listeners = append(d.listeners, l)
		d.addrs = append(d.addrs, l.Addr)
		log.Info("listening", "transport", "rdma", "addr", l.Addr(), "port_id", i+1)
	}
	if cfg.Cluster.Enabled {
		m, err := startCluster(cfg, d.tgt, disc, d.provider, log)
		if err != nil {
			return err
		}
		d.member = m
		d.stopCNTLID = watchCNTLIDRange(m.Node, cfg.Cluster.NodeID, filepath.Join(clusterDir(cfg), cntlidFile), d.cntlid, d.tgt.SetCNTLIDRange, log)
		// The agent may register its own build info one day: keep theirs.
		if err := m.Metrics.Registry().Register(buildInfo()); err != nil {
			log.Debug("rdmablk_build_info not registered", "err", err)
		}
		m.Metrics.Registry().MustRegister(d.transportCollector())
	} else if cfg.Metrics.Listen != "" {
		d.metrics = startMetrics(cfg.Metrics.Listen, standaloneMetrics(d), log)
	}
	return nil
}

// listenCause shortens a listen error to its system cause when there is
// one ("address already in use"), with what to check; other errors are
// returned as they are.
func listenCause(err error) error {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		// verbs/soft formats the socket error with %v: find it by text.
		for _, e := range []syscall.Errno{syscall.EADDRINUSE, syscall.EADDRNOTAVAIL, syscall.EACCES} {
			if strings.HasSuffix(err.Error(), e.Error()) {
				errno = e
			}
		}
		if errno == 0 {
			return err
		}
	}
	switch errno {
	case syscall.EADDRINUSE:
		return fmt.Errorf("%w (another rdmablkd or an nvmet port on it?)", errno)
	case syscall.EADDRNOTAVAIL:
		return fmt.Errorf("%w (no interface of this host has that address)", errno)
	case syscall.EACCES:
		return fmt.Errorf("%w (ports below 1024 need CAP_NET_BIND_SERVICE)", errno)
	}
	return errno
}

// unwrapPath drops the *os.PathError wrapper when the caller already
// names the path, keeping the operation and cause ("mkdir: permission
// denied").
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Cluster returns the cluster member, nil when cluster mode is off.
func (d *Daemon) Cluster() *agent.Agent { return d.member }

// Addrs returns the actual listen addresses, in config order.
func (d *Daemon) Addrs() []string {
	out := make([]string, len(d.addrs))
	for i, a := range d.addrs {
		out[i] = a()
	}
	return out
}

// MetricsAddr is the bound address of the standalone /metrics endpoint,
// "" when it is off (or cluster mode serves /metrics on its API).
func (d *Daemon) MetricsAddr() string {
	if d.metrics == nil {
		return ""
	}
	return d.metrics.Addr()
}

// Target exposes the target core (for tests and the control plane).
func (d *Daemon) Target() *target.Target { return d.tgt }

// Close drains and stops everything: listeners first (every in-flight
// command completes and its response is sent, or its connection is
// dead), then the target, then the backends (flushed and closed).
func (d *Daemon) Close() error {
	var errs []error
	if d.metrics != nil {
		errs = append(errs, d.metrics.close())
		d.metrics = nil
	}
	if d.stopCNTLID != nil {
		d.stopCNTLID()
		d.stopCNTLID = nil
	}
	if d.member != nil {
		errs = append(errs, d.member.Stop())
	}
	for _, l := range d.listeners {
		errs = append(errs, l.Close())
		st := l.Stats()
		d.log.Info("NVMe-oF/RDMA listener closed", "addr", l.Addr(), "accepted", st.Accepted, "commands", st.Commands,
			"quiet_entries", st.QuietEntries, "quiet_wakes", st.QuietWakes, "spins", st.Spins, "clean_skips", st.CleanSkips)
	}
	d.listeners = nil
	for _, l := range d.tcpListeners {
		errs = append(errs, l.Close())
		st := l.Stats()
		d.log.Info("NVMe/TCP listener closed", "addr", l.Addr(), "accepted", st.Accepted, "writes", st.Writes,
			"writer_handoffs", st.WriterHandoffs, "zero_copy_sends", st.ZeroCopySends, "zero_copy_overdue", st.ZeroCopyOverdue,
			"spin_reads", st.SpinReads, "spin_yields", st.SpinYields, "spin_run_outs", st.SpinRunOuts)
	}
	d.tcpListeners, d.addrs = nil, nil
	if z := initiator.TCPZeroCopyStats(); z.Sends > 0 || z.Full > 0 || z.Overdue > 0 {
		// Replica legs over NVMe/TCP (the process's initiator).
		d.log.Info("NVMe/TCP host zero-copy sends", "sends", z.Sends, "bytes", z.Bytes, "copied", z.Copied, "full", z.Full, "overdue", z.Overdue)
	}
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
	if c, ok := d.provider.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	d.provider = nil
	if d.transcript != nil {
		errs = append(errs, d.transcript.Close())
		d.transcript = nil
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
			return nil, fmt.Errorf("size: %w", err)
		}
		size = s
	}
	b, err := file.Open(volumePath(dataDir, vc.Path), file.Options{
		Size: size, BlockSize: vc.BlockSize, ReadOnly: vc.ReadOnly,
	})
	if err != nil {
		return nil, unwrapPath(err)
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
