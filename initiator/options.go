package initiator

import (
	"crypto/rand"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/verbs"
	"github.com/rdmablk/rdmablk/verbs/netns"
)

// Options configure Connect and Discover. The zero value of every field
// except Provider selects a default.
type Options struct {
	// Transport is the NVMe-oF transport: TransportRDMA (the default,
	// also for "") or TransportTCP. An address given to Connect, Discover
	// or a session path may override it with a "tcp://" or "rdma://"
	// prefix.
	Transport Transport
	// Provider is the verbs implementation (soft, ibverbs). Required for
	// RDMA; unused over TCP.
	Provider verbs.Provider
	// HeaderDigest and DataDigest ask the controller for NVMe/TCP
	// header and data digests (CRC32C; nvme-cli --hdr-digest,
	// --data-digest). A controller that does not enable what was asked
	// is refused. Ignored over RDMA.
	HeaderDigest bool
	DataDigest   bool
	// ZeroCopySendMin: over NVMe/TCP, an I/O queue's batch of command
	// capsules carrying at least this many bytes of in-capsule (write)
	// data goes out with io_uring's zero-copy sendmsg (Linux 6.1),
	// never to a loopback address. 0 or negative: never, a session's
	// default (rdmablkd's replica legs use 4 KiB; wire_tcp_zc.go).
	ZeroCopySendMin int
	// HostNQN identifies the host; default nvme.HostNQNFromUUID(HostID).
	HostNQN string
	// HostID is the 128-bit host identifier sent in the Connect data;
	// default: a random UUID generated once per process.
	HostID [16]byte
	// IOQueues is the number of I/O queues to create; default
	// min(4, GOMAXPROCS as the process was given it, before an attachment's
	// pollers raised it: internal/nbsys.Procs). It is clamped to what Set Features (Number of
	// Queues) grants.
	IOQueues int
	// QueueDepth is the number of entries per I/O queue; default 128. It
	// is clamped to CAP.MQES+1, the device's MaxQPWR and MaxCQE, and the
	// controller receive queue size the target accepts.
	QueueDepth int
	// KeepAlive is the KATO sent in the admin Connect; the host sends Keep
	// Alive every KeepAlive/2. Default 5s; a negative value disables keep
	// alive (KATO 0). (The zero value selects the default, so "0 disables"
	// is spelled KeepAlive: -1.)
	KeepAlive time.Duration
	// ConnectTimeout bounds Connect and Discover as a whole; default 10s.
	ConnectTimeout time.Duration
	// Logger receives control-path events; default: discard.
	Logger *slog.Logger
	// NetNS, when set, creates the controller's RDMA resources (CM IDs,
	// PDs, CQs, QPs) inside this network namespace: a name under
	// /run/netns or a path (see package verbs/netns, also for RDMA netns
	// exclusive mode and the /sys caveat). Empty: the caller's namespace.
	NetNS string

	// DHCHAPSecret is the host's DH-HMAC-CHAP secret (nvme-cli
	// --dhchap-secret; see auth.ParseSecret). When a fabrics Connect
	// response sets AUTHREQ.ATR, that queue — the admin queue and each
	// I/O queue, as the Linux host does — is authenticated with it before
	// any other command (NVMe Base 2.0 §8.13.5). nil: no secret; a
	// controller that requires authentication is then refused with an
	// *AuthError.
	DHCHAPSecret *auth.Secret
	// DHCHAPCtrlSecret is the controller's secret (nvme-cli
	// --dhchap-ctrl-secret): non-nil requests bidirectional
	// authentication, so the host also verifies the controller. It needs
	// DHCHAPSecret, and with it the host authenticates every queue even
	// when the controller does not ask (AUTHREQ.ATR clear; not so for
	// the discovery controller): a controller that cannot prove the
	// secret is refused.
	DHCHAPCtrlSecret *auth.Secret

	// OnKeepAlive, when set, is called by the controller's keep-alive
	// goroutine after each Keep Alive command with its error (monitoring,
	// tests). It must not block.
	OnKeepAlive func(error)
	// OnRescan, when set, is called by the controller's event goroutine
	// after each namespace rescan that an asynchronous event caused, with
	// its error. It must not block.
	OnRescan func(error)

	// onANAChange is called by the controller's event goroutine when the
	// controller reports an ANA change notice (set by Session; it must
	// not block).
	onANAChange func()
}

// Defaults.
const (
	DefaultIOQueues       = 4
	DefaultQueueDepth     = 128
	DefaultKeepAlive      = 5 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	// AdminQueueDepth is the admin queue size (NVMF_AQ_DEPTH, the fabrics
	// minimum that the Linux host uses as well).
	AdminQueueDepth = 32
	// MinQueueDepth is the smallest I/O queue depth accepted.
	MinQueueDepth = 2
	// DefaultMaxTransfer caps the data buffer size per command when the
	// controller reports no MDTS limit (or a larger one).
	DefaultMaxTransfer = 128 << 10
	// maxMRChunk is the largest memory region registered at once (PVRDMA
	// user MR limit: 262144 pages of 4 KiB).
	maxMRChunk = 1 << 30
)

var (
	processHostIDOnce sync.Once
	processHostID     [16]byte
)

// defaultHostID returns a random (version 4) UUID, the same for the whole
// process.
func defaultHostID() [16]byte {
	processHostIDOnce.Do(func() {
		if _, err := io.ReadFull(rand.Reader, processHostID[:]); err != nil {
			// crypto/rand does not fail on supported platforms; a fixed
			// but valid identifier is better than none.
			processHostID = [16]byte{0x72, 0x64, 0x6d, 0x61, 0x62, 0x6c, 0x6b}
		}
		processHostID[6] = processHostID[6]&0x0f | 0x40
		processHostID[8] = processHostID[8]&0x3f | 0x80
	})
	return processHostID
}

// withDefaults returns o with defaults filled in.
func (o Options) withDefaults() Options {
	if o.HostID == ([16]byte{}) {
		o.HostID = defaultHostID()
	}
	if o.HostNQN == "" {
		o.HostNQN = nvme.HostNQNFromUUID(o.HostID)
	}
	if o.IOQueues <= 0 {
		o.IOQueues = min(DefaultIOQueues, nbsys.Procs()) // not counting Ps kept for sleeping pollers
	}
	if o.QueueDepth <= 0 {
		o.QueueDepth = DefaultQueueDepth
	}
	if o.QueueDepth < MinQueueDepth {
		o.QueueDepth = MinQueueDepth
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.KeepAlive < 0 {
		o.KeepAlive = 0
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Provider != nil {
		o.Provider = netns.Provider(o.Provider, o.NetNS)
	}
	return o
}

// katoMillis is the KATO field of the admin Connect command.
func (o *Options) katoMillis() uint32 {
	if o.KeepAlive <= 0 {
		return 0
	}
	ms := o.KeepAlive.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > 1<<32-1 {
		ms = 1<<32 - 1
	}
	return uint32(ms)
}
