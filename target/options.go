package target

import (
	"log/slog"

	"github.com/rdmablk/rdmablk/nvme/auth"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultWorkers          = 64
	DefaultMaxIOQueues      = 64
	DefaultMinKATO          = time.Second
	DefaultMaxKATO          = 5 * time.Minute
	DefaultFirmwareRevision = "rdmablk"
	// DiscoveryKATO is the keep-alive timeout a discovery controller gets
	// when the host connects with KATO 0, so that abandoned discovery
	// sessions are reaped (as Linux nvmet's NVMET_DISC_KATO_MS).
	DiscoveryKATO = 120 * time.Second
)

// Options configure a Target. The zero value is usable.
type Options struct {
	// Logger receives control-path events (connects, keep-alive expiry,
	// shutdown flush failures). nil means slog.Default(). The I/O path
	// does not log.
	Logger *slog.Logger
	// Workers is the number of goroutines that run commands on backends
	// that may block (0 = DefaultWorkers).
	Workers int
	// MaxIOQueues caps the I/O queues a controller is granted by Set
	// Features Number of Queues and accepted by Connect (0 =
	// DefaultMaxIOQueues; values above 65535 are clamped).
	MaxIOQueues int
	// MinKATO and MaxKATO clamp a non-zero keep-alive timeout asked for by
	// the host (Connect KATO, Set Features Keep Alive Timer); 0 means
	// DefaultMinKATO / DefaultMaxKATO; MaxKATO below MinKATO is raised to
	// MinKATO.
	//
	// A host KATO of 0 disables keep alive on an I/O controller, as the
	// spec says (the transport still notices a dead connection); on a
	// discovery controller it means DiscoveryKATO (clamped), as in nvmet.
	MinKATO, MaxKATO time.Duration
	// FirmwareRevision is Identify Controller FR and firmware slot 1 (0 =
	// DefaultFirmwareRevision). Longer than 8 bytes is truncated.
	FirmwareRevision string
	// Discovery, when set, adds entries to the discovery log for
	// subsystems this target does not serve itself (e.g. those served by
	// other nodes of a cluster); see DiscoverySource. nil adds nothing.
	Discovery DiscoverySource
	// AuthTranscript, when set, receives a record of each queue's first
	// DH-HMAC-CHAP transaction once it authenticated or failed (any
	// goroutine; must not block long). A transcript holds the secrets and
	// the controller's random bytes: lab and tests only (golden vectors
	// computed by a real host, auth.Transcript). nil records nothing.
	AuthTranscript func(*auth.Transcript)
	// FirstCNTLID is the first controller ID every subsystem hands out
	// (dynamic controller model, NVMe-oF 1.1 §3.3); later ones follow it
	// and wrap within FirstCNTLID..LastCNTLID. 0, or a reserved ID (0xFFF0
	// and above), means 1. Targets that serve the same subsystem to one host (the
	// nodes of a cluster exporting a replicated volume) need different
	// starting points: the Linux host refuses a second path whose
	// controller ID another path of the subsystem already has
	// ("Duplicate cntlid"), as nvmet's attr_cntlid_min/max ranges avoid.
	FirstCNTLID uint16
	// LastCNTLID, when not 0, makes FirstCNTLID..LastCNTLID the range
	// controller IDs wrap within (cntlid.go); 0 (or a value below
	// FirstCNTLID or above 0xFFEF) leaves the whole space.
	// Target.SetCNTLIDRange changes the range at run time.
	LastCNTLID uint16

	// clock replaces the wall clock in tests (nil = wallClock).
	clock clock
}

// withDefaults returns o with zero fields replaced by defaults.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.clock == nil {
		o.clock = wallClock{}
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.MaxIOQueues <= 0 {
		o.MaxIOQueues = DefaultMaxIOQueues
	}
	if o.MaxIOQueues > 0xFFFF {
		o.MaxIOQueues = 0xFFFF
	}
	if o.MinKATO <= 0 {
		o.MinKATO = DefaultMinKATO
	}
	if o.MaxKATO <= 0 {
		o.MaxKATO = DefaultMaxKATO
	}
	if o.MaxKATO < o.MinKATO {
		o.MaxKATO = o.MinKATO
	}
	if o.FirmwareRevision == "" {
		o.FirmwareRevision = DefaultFirmwareRevision
	}
	if o.FirstCNTLID < minCNTLID || o.FirstCNTLID > maxCNTLID {
		o.FirstCNTLID = minCNTLID
	}
	if o.LastCNTLID < o.FirstCNTLID || o.LastCNTLID > maxCNTLID {
		o.LastCNTLID = 0
	}
	if len(o.FirmwareRevision) > 8 {
		o.FirmwareRevision = o.FirmwareRevision[:8]
	}
	return o
}

// kato converts a host keep-alive timeout in milliseconds to the timeout
// the controller runs (0 = disabled).
func (o *Options) kato(ms uint32, discovery bool) time.Duration {
	if ms == 0 {
		if !discovery {
			return 0
		}
		return min(max(DiscoveryKATO, o.MinKATO), o.MaxKATO)
	}
	d := time.Duration(ms) * time.Millisecond
	return min(max(d, o.MinKATO), o.MaxKATO)
}
