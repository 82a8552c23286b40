package attach

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// Config describes one attachment.
type Config struct {
	// Name identifies the attachment (export name, file names). Letters,
	// digits, '.', '_' and '-'.
	Name string `yaml:"name" json:"name"`
	// NQN is the subsystem NQN. Required.
	NQN string `yaml:"nqn" json:"nqn"`
	// Paths are the target addresses ("host:port") of the subsystem,
	// preferred first. At least one.
	Paths []string `yaml:"paths" json:"paths"`
	// NSID is the namespace (0: the first active one).
	NSID uint32 `yaml:"nsid" json:"nsid"`
	// Socket is the NBD unix socket; default RUNDIR/NAME.sock.
	Socket string `yaml:"socket" json:"socket"`
	// TCP optionally also serves NBD on this address ("127.0.0.1:10809").
	TCP string `yaml:"tcp" json:"tcp,omitempty"`
	// Frontend is how the namespace reaches the block layer: "auto"
	// (default: ublk when /dev/ublk-control exists, after one modprobe
	// ublk_drv as root; else nbd), "ublk" or "nbd".
	Frontend string `yaml:"frontend" json:"frontend,omitempty"`
	// Device is the kernel device: "auto" (ublk: a new /dev/ublkbN; nbd: a
	// free /dev/nbdX when the nbd module is loaded, else none), "none"
	// (NBD export only), or a path like /dev/nbd0 or /dev/ublkb3.
	Device string `yaml:"device" json:"device"`
	// ReconnectDelay and CtrlLossTimeout are nvme-cli's reconnect-delay
	// and ctrl-loss-tmo (negative ctrl-loss: retry forever).
	ReconnectDelay  time.Duration `yaml:"reconnect_delay" json:"reconnect_delay"`
	CtrlLossTimeout time.Duration `yaml:"ctrl_loss_tmo" json:"ctrl_loss_tmo"`
	// Queues and QueueDepth of each path's controller (0: defaults).
	Queues     int `yaml:"queues" json:"queues"`
	QueueDepth int `yaml:"queue_depth" json:"queue_depth"`
	// HostNQN (default: derived from a random host ID).
	HostNQN string `yaml:"hostnqn" json:"hostnqn,omitempty"`
	// NetNS runs the attachment's RDMA resources in this network
	// namespace (a name under /var/run/netns or a path).
	NetNS string `yaml:"netns" json:"netns,omitempty"`
	// IOTimeout is the kernel nbd request timeout (0: kernel default).
	IOTimeout time.Duration `yaml:"io_timeout" json:"io_timeout,omitempty"`
	// DHCHAPSecret is the host's DH-HMAC-CHAP secret ("DHHC-1:…:", as
	// `rdmablk gen-dhchap-key` or `nvme gen-dhchap-key` prints it; nvme-cli
	// --dhchap-secret); DHCHAPSecretFile reads it from a file instead
	// (which others must not be able to read), keeping it out of a
	// readable configuration. Set at most one; they override the
	// command line's. Redacted wherever a Config is printed.
	DHCHAPSecret     Secret `yaml:"dhchap_secret" json:"dhchap_secret,omitempty"`
	DHCHAPSecretFile string `yaml:"dhchap_secret_file" json:"dhchap_secret_file,omitempty"`
	// DHCHAPCtrlSecret / DHCHAPCtrlSecretFile: the controller's secret
	// (bidirectional authentication; --dhchap-ctrl-secret).
	DHCHAPCtrlSecret     Secret `yaml:"dhchap_ctrl_secret" json:"dhchap_ctrl_secret,omitempty"`
	DHCHAPCtrlSecretFile string `yaml:"dhchap_ctrl_secret_file" json:"dhchap_ctrl_secret_file,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Validate checks c and fills defaults relative to runDir.
func (c *Config) Validate(runDir string) error {
	if !nameRE.MatchString(c.Name) {
		return fmt.Errorf("attach: invalid attachment name %q", c.Name)
	}
	if c.NQN == "" {
		return fmt.Errorf("attach: %s: no subsystem NQN", c.Name)
	}
	if len(c.Paths) == 0 {
		return fmt.Errorf("attach: %s: no target address", c.Name)
	}
	if c.Socket == "" {
		c.Socket = filepath.Join(runDir, c.Name+".sock")
	}
	if c.Device == "" {
		c.Device = "auto"
	}
	if _, _, err := c.secrets(); err != nil {
		return err
	}
	switch c.Frontend {
	case "":
		c.Frontend = FrontendAuto
	case FrontendAuto, FrontendUblk, FrontendNBD:
	default:
		return fmt.Errorf("attach: %s: unknown frontend %q (want auto, ublk or nbd)", c.Name, c.Frontend)
	}
	return nil
}

// DefaultRunDir is $RDMABLK_RUN_DIR, else /run/rdmablk when /run is
// writable (root, systemd), else $XDG_RUNTIME_DIR/rdmablk, else
// TMPDIR/rdmablk-UID.
func DefaultRunDir() string {
	if d := os.Getenv("RDMABLK_RUN_DIR"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/rdmablk"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "rdmablk")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("rdmablk-%d", os.Geteuid()))
}
