package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/configs"
	"github.com/rdmablk/rdmablk/internal/confkeys"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/target/rdma"
	"github.com/rdmablk/rdmablk/verbs/providers"
	"github.com/rdmablk/rdmablk/verbs/soft"
)

// Config is the daemon configuration (see configs/rdmablkd.yaml).
type Config struct {
	DataDir    string           `mapstructure:"data_dir"`
	Log        LogConfig        `mapstructure:"log"`
	Transport  TransportConfig  `mapstructure:"transport"`
	Listeners  []ListenerConfig `mapstructure:"listeners"`
	Target     TargetConfig     `mapstructure:"target"`
	Volumes    []VolumeConfig   `mapstructure:"volumes"`
	Subsystems []SubsysConfig   `mapstructure:"subsystems"`
	Cluster    ClusterConfig    `mapstructure:"cluster"`
	Metrics    MetricsConfig    `mapstructure:"metrics"`
}

// LogConfig selects slog level and format.
type LogConfig struct {
	Level  string `mapstructure:"level"`
	Format string `mapstructure:"format"`
}

// TransportConfig selects the verbs provider and RDMA binding limits.
type TransportConfig struct {
	Provider          string `mapstructure:"provider"`
	Profile           string `mapstructure:"profile"`
	InCapsuleDataSize int    `mapstructure:"in_capsule_data_size"`
	MaxDataTransfer   int    `mapstructure:"max_data_transfer"`
	MaxQueueDepth     int    `mapstructure:"max_queue_depth"`
	// PollSpins: empty CQ polls before a queue poller sleeps (0: default;
	// negative: sleep at once). See rdma.Config.PollSpins.
	PollSpins int `mapstructure:"poll_spins"`
	// PollQuietAfter: empty passes after which an idle queue's CQs are
	// no longer polled until it has work (0: off). See
	// rdma.Config.PollQuietAfter.
	PollQuietAfter int `mapstructure:"poll_quiet_after"`
	// PollClean: leave a busy queue's CQs unpolled while their arms show
	// nothing arrived (unset: on). See rdma.Config.PollClean.
	PollClean *bool `mapstructure:"poll_clean"`
	// SendWithInvalidate: answer invalidating keyed SGLs with SEND_WITH_INV
	// (unset: when the device can). See rdma.Config.SendWithInvalidate.
	SendWithInvalidate *bool `mapstructure:"send_with_invalidate"`
	// ConnectTimeout: how long a connection may stay without a successful
	// Fabrics Connect (0: default 10s; negative: no limit).
	ConnectTimeout time.Duration `mapstructure:"connect_timeout"`
	// MaxUnconnectedQueues / MaxUnconnectedPerHost cap the connections
	// waiting for their Fabrics Connect, in all and per host address
	// (0: defaults 1024 / 256; negative: no cap).
	MaxUnconnectedQueues  int `mapstructure:"max_unconnected_queues"`
	MaxUnconnectedPerHost int `mapstructure:"max_unconnected_per_host"`
	// MaxDataBufferMemory caps the data buffer memory each listener's
	// queues register (a size: 1G; "" or 0: default 1 GiB; -1: no cap).
	MaxDataBufferMemory string `mapstructure:"max_data_buffer_memory"`
	// PollGroups: pollers that each own many queues (0: one per CPU).
	PollGroups int `mapstructure:"poll_groups"`
	// PollWait: how an idle poll group sleeps: "channel" (default) or
	// "epoll" (in epoll_wait on its CQs' completion channels; an
	// experiment, see rdma.Config.PollWait).
	PollWait string `mapstructure:"poll_wait"`
	// LockPollerThreads: lock each poll group to an OS thread (unset: no).
	LockPollerThreads *bool `mapstructure:"lock_poller_threads"`
	// TCPZeroCopySendMin: NVMe/TCP writes carrying at least this many
	// bytes of read data go out zero-copy (0: default 32 KiB; negative:
	// never). See tcp.Config.ZeroCopySendMin.
	TCPZeroCopySendMin int `mapstructure:"tcp_zero_copy_send_min"`
	// TCPPollSpins: passes an NVMe/TCP I/O queue's reader spins before
	// it parks (0: default, no spinning; negative: no spinning). See
	// tcp.Config.PollSpins.
	TCPPollSpins int `mapstructure:"tcp_poll_spins"`
}

// dataBufferLimit is MaxDataBufferMemory in bytes for rdma.Config
// (0: default, negative: no cap).
func (t TransportConfig) dataBufferLimit() (int64, error) {
	switch v := strings.TrimSpace(t.MaxDataBufferMemory); v {
	case "", "0":
		return 0, nil
	case "-1":
		return -1, nil
	default:
		return catalog.ParseSize(v)
	}
}

// ListenerConfig is one NVMe-oF listen address.
type ListenerConfig struct {
	Addr string `mapstructure:"addr"`
	// Transport is "rdma" (the default when empty) or "tcp" (NVMe/TCP,
	// target/tcp). The transport.* limits apply to both.
	Transport string `mapstructure:"transport"`
}

// isTCP reports an NVMe/TCP listener.
func (l ListenerConfig) isTCP() bool { return strings.EqualFold(l.Transport, "tcp") }

// TargetConfig tunes the target core.
type TargetConfig struct {
	Workers     int `mapstructure:"workers"`
	MaxIOQueues int `mapstructure:"max_io_queues"`
	// DHCHAPTranscript: append a JSON line per queue's first DH-HMAC-CHAP
	// transaction to this file (auth.Transcript). It holds the secrets and
	// the controller's random bytes: lab only, to capture golden vectors
	// from a real host. "" (default): off.
	DHCHAPTranscript string `mapstructure:"dhchap_transcript"`
}

// VolumeConfig is a backing file or block device.
type VolumeConfig struct {
	Name      string `mapstructure:"name"`
	Path      string `mapstructure:"path"`
	Size      string `mapstructure:"size"`
	BlockSize int    `mapstructure:"block_size"`
	ReadOnly  bool   `mapstructure:"read_only"`
}

// SubsysConfig is an NVM subsystem.
type SubsysConfig struct {
	NQN          string       `mapstructure:"nqn"`
	Serial       string       `mapstructure:"serial"`
	Model        string       `mapstructure:"model"`
	AllowAnyHost bool         `mapstructure:"allow_any_host"`
	Hosts        []HostConfig `mapstructure:"hosts"`
	Namespaces   []NSConfig   `mapstructure:"namespaces"`
	// DHCHAPRequired refuses every host without a DH-HMAC-CHAP secret
	// (target.SubsystemConfig.RequireAuth).
	DHCHAPRequired bool `mapstructure:"dhchap_required"`
	// DHCHAPHashes / DHCHAPDHGroups are the hashes and DH groups the
	// subsystem accepts, in preference order (empty: all, preferring
	// SHA-256 and the null group); a host may override them.
	DHCHAPHashes   []string `mapstructure:"dhchap_hashes"`
	DHCHAPDHGroups []string `mapstructure:"dhchap_dhgroups"`
}

// NSConfig maps an NSID to a volume.
type NSConfig struct {
	NSID   uint32 `mapstructure:"nsid"`
	Volume string `mapstructure:"volume"`
}

// ClusterConfig turns the daemon into a cluster member (see package
// cluster/agent). Disabled, the daemon serves only its static volumes.
type ClusterConfig struct {
	Enabled bool   `mapstructure:"enabled"`
	NodeID  string `mapstructure:"node_id"`
	// DataDir holds raft state and volume files ("" = <data_dir>/cluster).
	DataDir       string             `mapstructure:"data_dir"`
	RaftBind      string             `mapstructure:"raft_bind"`
	RaftAdvertise string             `mapstructure:"raft_advertise"`
	APIBind       string             `mapstructure:"api_bind"`
	APIAdvertise  string             `mapstructure:"api_advertise"`
	Bootstrap     bool               `mapstructure:"bootstrap"`
	Join          []string           `mapstructure:"join"`
	TLS           ClusterTLS         `mapstructure:"tls"`
	Auth          ClusterAuth        `mapstructure:"auth"`
	Raft          ClusterRaft        `mapstructure:"raft"`
	Resync        time.Duration      `mapstructure:"resync"`
	Replication   ClusterReplication `mapstructure:"replication"`
	Failover      ClusterFailover    `mapstructure:"failover"`
}

// ClusterReplication tunes replicated volumes (issue 16).
type ClusterReplication struct {
	// RebuildBytesPerSecond limits each replica rebuild's copy rate
	// (0 = 200 MiB/s, negative = unlimited).
	RebuildBytesPerSecond int64 `mapstructure:"rebuild_bytes_per_second"`
	// Transport is how an owner reaches its volumes' other copies:
	// "auto" (or empty: the copy node's RDMA listeners, then its NVMe/TCP
	// ones as alternate paths — NVMe/TCP first when every RDMA device of
	// this node is software, rxe or siw, where each RDMA packet costs the
	// CPU a copy, a zeroed buffer and a software ICRC that a TCP send
	// through the NIC's offloads does not), "rdma" or "tcp" (only those
	// listeners).
	Transport string `mapstructure:"transport"`
	// TCPZeroCopySendMin: a leg's batch of NVMe/TCP capsules carrying at
	// least this many bytes of write data goes out zero-copy (initiator
	// Options.ZeroCopySendMin). 0: the default, DefaultLegZeroCopySendMin
	// (4096: every batch with a write); negative: never, the legs copy
	// (docs/tcp-zero-copy.md, "The host side").
	TCPZeroCopySendMin int `mapstructure:"tcp_zero_copy_send_min"`
}

// ClusterFailover tunes the leader's automatic failover of volumes whose
// owner is unreachable (zero = defaults: probe every 1 s, fail over after
// 3 s, or after 1 s when the owner's host refuses every probe's
// connection: no rdmablkd listens there; server.WatchOptions).
type ClusterFailover struct {
	Interval     time.Duration `mapstructure:"interval"`
	Grace        time.Duration `mapstructure:"grace"`
	RefusedGrace time.Duration `mapstructure:"refused_grace"`
}

// ClusterTLS configures HTTPS on the control API.
type ClusterTLS struct {
	CertFile string `mapstructure:"cert_file"`
	KeyFile  string `mapstructure:"key_file"`
	// ClientCAFile requires client certificates signed by it.
	ClientCAFile string `mapstructure:"client_ca_file"`
	// CAFile verifies other nodes' API certificates.
	CAFile string `mapstructure:"ca_file"`
}

// ClusterAuth configures who may drive the control API (docs/security.md).
type ClusterAuth struct {
	// TokensFile lists bearer tokens by hash: "ROLE NAME sha256:HEX".
	TokensFile string `mapstructure:"tokens_file"`
	// NodeTokenFile holds the cluster's node token (the secret itself,
	// mode 0600); a bootstrapping node creates it when missing.
	NodeTokenFile string `mapstructure:"node_token_file"`
	// Insecure accepts a non-loopback API without TLS or admin identities.
	Insecure bool `mapstructure:"insecure"`
}

// ClusterRaft tunes raft (zero = defaults).
type ClusterRaft struct {
	HeartbeatTimeout time.Duration `mapstructure:"heartbeat_timeout"`
	ElectionTimeout  time.Duration `mapstructure:"election_timeout"`
	// LeaderLeaseTimeout and CommitTimeout: see cluster.Config.
	LeaderLeaseTimeout time.Duration `mapstructure:"leader_lease_timeout"`
	CommitTimeout      time.Duration `mapstructure:"commit_timeout"`
	ApplyTimeout       time.Duration `mapstructure:"apply_timeout"`
	SnapshotThreshold  uint64        `mapstructure:"snapshot_threshold"`
	LogLevel           string        `mapstructure:"log_level"`
}

// NewViper returns a viper instance holding the embedded default
// configuration, with environment variables RDMABLKD_* bound.
func NewViper() *viper.Viper {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(configs.DaemonDefault)); err != nil {
		// The embedded file is part of the binary; a parse error is a build bug.
		panic("daemon: embedded default config: " + err.Error())
	}
	v.SetEnvPrefix("RDMABLKD")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	v.AllowEmptyEnv(true) // RDMABLKD_METRICS_LISTEN= turns the endpoint off
	bindEnv(v)
	return v
}

// MergeFile merges a YAML config file over the defaults. Lists (volumes,
// subsystems, listeners) in the file replace the default lists. A key that
// names no setting is an error naming the file, line, key and the nearest
// valid key.
func MergeFile(v *viper.Viper, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := v.MergeConfig(bytes.NewReader(data)); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	// Each problem names the file and line.
	return confkeys.CheckYAML(path, data, &Config{}, "mapstructure")
}

// Load decodes and validates the configuration. listen, when not empty,
// replaces the configured listeners (the --listen flag; it wins over
// RDMABLKD_LISTENERS, which wins over the file). Every RDMABLKD_*
// variable must name a setting and parse as its type.
func Load(v *viper.Viper, listen []string) (*Config, error) {
	if err := checkEnv(v, environ(), len(listen) > 0); err != nil {
		return nil, err
	}
	if len(listen) > 0 {
		setListeners(v, listen)
	}
	var c Config
	if err := v.Unmarshal(&c, viper.DecodeHook(decodeHook)); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks cross references and values, reporting every problem.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Listeners) == 0 {
		errs = append(errs, errors.New("config: no listeners"))
	}
	for i, l := range c.Listeners {
		if err := checkListenAddr(l.Addr); err != nil {
			errs = append(errs, fmt.Errorf("config: listeners[%d].addr %q (--listen): %w", i, l.Addr, err))
		}
		if t := strings.ToLower(l.Transport); t != "" && t != "rdma" && t != "tcp" {
			errs = append(errs, fmt.Errorf("config: listeners[%d].transport %q: want rdma or tcp", i, l.Transport))
		}
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("config: data_dir (--data-dir) is empty"))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Log.Level)); err != nil {
		errs = append(errs, fmt.Errorf("config: log.level %q (--log-level): want debug, info, warn or error", c.Log.Level))
	}
	switch strings.ToLower(c.Log.Format) {
	case "", "text", "json":
	default:
		errs = append(errs, fmt.Errorf("config: log.format %q: want text or json", c.Log.Format))
	}
	switch c.Transport.Provider {
	case "auto", "soft":
	case "ibverbs":
		if !slices.Contains(providers.Names(), "ibverbs") {
			errs = append(errs, errors.New(`config: transport.provider "ibverbs" (--provider): this rdmablkd was built without it (go build -tags ibverbs; needs rdma-core's libibverbs-dev and librdmacm-dev)`))
		}
	default:
		errs = append(errs, fmt.Errorf("config: transport.provider %q (--provider): want auto, soft or ibverbs", c.Transport.Provider))
	}
	if _, err := soft.ProfileByName(c.Transport.Profile); err != nil {
		errs = append(errs, fmt.Errorf("config: transport.profile %q (--profile): want %s or %s",
			c.Transport.Profile, soft.ProfileDefault.Name, soft.ProfilePVRDMA.Name))
	}
	errs = append(errs, c.Transport.validate()...)
	if w := c.Target.Workers; w < 0 || w > maxWorkers {
		errs = append(errs, fmt.Errorf("config: target.workers %d: want 0 (default %d) to %d", w, target.DefaultWorkers, maxWorkers))
	}
	if q := c.Target.MaxIOQueues; q < 0 || q > 65535 {
		errs = append(errs, fmt.Errorf("config: target.max_io_queues %d: want 0 (default %d) to 65535", q, target.DefaultMaxIOQueues))
	}
	vols := map[string]bool{}
	for i, vc := range c.Volumes {
		if vc.Name == "" || vc.Path == "" {
			errs = append(errs, fmt.Errorf("config: volumes[%d]: name and path are required", i))
			continue
		}
		if vols[vc.Name] {
			errs = append(errs, fmt.Errorf("config: volume %q defined twice", vc.Name))
		}
		vols[vc.Name] = true
		if vc.Size != "" {
			if _, err := catalog.ParseSize(vc.Size); err != nil {
				errs = append(errs, fmt.Errorf("config: volume %q: %w", vc.Name, err))
			}
		}
		if vc.BlockSize != 0 && vc.BlockSize != 512 && vc.BlockSize != 4096 {
			errs = append(errs, fmt.Errorf("config: volume %q: block_size %d: want 512 or 4096", vc.Name, vc.BlockSize))
		}
	}
	for i := range c.Subsystems {
		s := &c.Subsystems[i]
		if s.NQN == "" {
			errs = append(errs, errors.New("config: subsystem without nqn"))
		}
		errs = append(errs, s.validateAuth()...)
		for _, ns := range s.Namespaces {
			if !vols[ns.Volume] {
				errs = append(errs, fmt.Errorf("config: subsystem %q nsid %d: unknown volume %q", s.NQN, ns.NSID, ns.Volume))
			}
			if ns.NSID == 0 || ns.NSID == 0xFFFFFFFF {
				errs = append(errs, fmt.Errorf("config: subsystem %q: invalid nsid %d", s.NQN, ns.NSID))
			}
		}
	}
	if c.Cluster.Enabled {
		if c.Cluster.NodeID == "" || c.Cluster.RaftBind == "" {
			errs = append(errs, errors.New("config: cluster: node_id and raft_bind are required"))
		}
		if (c.Cluster.TLS.CertFile == "") != (c.Cluster.TLS.KeyFile == "") {
			errs = append(errs, errors.New("config: cluster.tls: cert_file and key_file go together"))
		}
		if _, err := legTransports(c.Cluster.Replication.Transport, false); err != nil {
			errs = append(errs, fmt.Errorf("config: cluster.replication.transport: %w", err))
		}
	}
	return errors.Join(errs...)
}

// maxWorkers bounds target.workers: each is a goroutine that may block in
// a backend.
const maxWorkers = 4096

// validate checks the transport limits against the RDMA binding's ranges
// (rdma.Config), naming the key.
func (t TransportConfig) validate() []error {
	var errs []error
	if n := t.InCapsuleDataSize; n > rdma.MaxInCapsuleDataSize || n > 0 && n%16 != 0 {
		errs = append(errs, fmt.Errorf("config: transport.in_capsule_data_size %d: want a multiple of 16 up to %d (0: default, negative: none)",
			n, rdma.MaxInCapsuleDataSize))
	}
	if n := t.MaxDataTransfer; n != 0 && (n < 4096 || n > rdma.MaxDataTransferLimit || n%4096 != 0) {
		errs = append(errs, fmt.Errorf("config: transport.max_data_transfer %d: want a multiple of 4096 from 4096 to %d (0: default)",
			n, rdma.MaxDataTransferLimit))
	}
	if n := t.MaxQueueDepth; n != 0 && (n < 2 || n > 65535) {
		errs = append(errs, fmt.Errorf("config: transport.max_queue_depth %d: want 2 to 65535 (0: default)", n))
	}
	if n := t.PollGroups; n < 0 || n > 1024 {
		errs = append(errs, fmt.Errorf("config: transport.poll_groups %d: want 0 (one per CPU) to 1024", n))
	}
	if n, err := t.dataBufferLimit(); err != nil || n > 0 && n < 1<<20 {
		errs = append(errs, fmt.Errorf("config: transport.max_data_buffer_memory %q: want a size of at least 1M (e.g. 1G), 0 for the default or -1 for no cap",
			t.MaxDataBufferMemory))
	}
	return errs
}

// checkListenAddr accepts host:port, [v6]:port, or a host alone (port
// 4420); the port must be a number from 1 to 65535.
func checkListenAddr(addr string) error {
	if addr == "" {
		return errors.New("empty")
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if strings.Count(addr, ":") == 1 {
			return errors.New("want IP:port, [IPv6]:port or an IP alone (port 4420)")
		}
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), "4420"
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return fmt.Errorf("%q is not an IP address (RDMA listens on an address of an RDMA-capable interface; want IP:port or [IPv6]:port)", host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q: want a number from 1 to 65535 (0: any free port)", port)
	}
	return nil
}
