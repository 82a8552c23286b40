package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/rdmablk/rdmablk/cluster/catalog"
	"github.com/rdmablk/rdmablk/configs"
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
	// SendWithInvalidate: answer invalidating keyed SGLs with SEND_WITH_INV
	// (unset: when the device can). See rdma.Config.SendWithInvalidate.
	SendWithInvalidate *bool `mapstructure:"send_with_invalidate"`
}

// ListenerConfig is one NVMe-oF/RDMA listen address.
type ListenerConfig struct {
	Addr string `mapstructure:"addr"`
}

// TargetConfig tunes the target core.
type TargetConfig struct {
	Workers     int `mapstructure:"workers"`
	MaxIOQueues int `mapstructure:"max_io_queues"`
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
	NQN          string     `mapstructure:"nqn"`
	Serial       string     `mapstructure:"serial"`
	Model        string     `mapstructure:"model"`
	AllowAnyHost bool       `mapstructure:"allow_any_host"`
	Hosts        []string   `mapstructure:"hosts"`
	Namespaces   []NSConfig `mapstructure:"namespaces"`
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
	DataDir       string        `mapstructure:"data_dir"`
	RaftBind      string        `mapstructure:"raft_bind"`
	RaftAdvertise string        `mapstructure:"raft_advertise"`
	APIBind       string        `mapstructure:"api_bind"`
	APIAdvertise  string        `mapstructure:"api_advertise"`
	Bootstrap     bool          `mapstructure:"bootstrap"`
	Join          []string      `mapstructure:"join"`
	TLS           ClusterTLS    `mapstructure:"tls"`
	Auth          ClusterAuth   `mapstructure:"auth"`
	Raft          ClusterRaft   `mapstructure:"raft"`
	Resync        time.Duration `mapstructure:"resync"`
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
	return v
}

// MergeFile merges a YAML config file over the defaults. Lists (volumes,
// subsystems, listeners) in the file replace the default lists.
func MergeFile(v *viper.Viper, path string) error {
	v.SetConfigFile(path)
	if err := v.MergeInConfig(); err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	return nil
}

// Load decodes and validates the configuration.
func Load(v *viper.Viper) (*Config, error) {
	var c Config
	if err := v.Unmarshal(&c); err != nil {
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
		if l.Addr == "" {
			errs = append(errs, fmt.Errorf("config: listeners[%d]: empty addr", i))
		}
	}
	switch c.Transport.Provider {
	case "auto", "soft", "ibverbs":
	default:
		errs = append(errs, fmt.Errorf("config: transport.provider %q: want auto, soft or ibverbs", c.Transport.Provider))
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
	for _, s := range c.Subsystems {
		if s.NQN == "" {
			errs = append(errs, errors.New("config: subsystem without nqn"))
		}
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
	}
	return errors.Join(errs...)
}
