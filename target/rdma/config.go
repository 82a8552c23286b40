package rdma

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/rdmablk/rdmablk/internal/nbsys"
	"github.com/rdmablk/rdmablk/target"
	"github.com/rdmablk/rdmablk/verbs"
)

// Defaults and limits of Config.
const (
	// DefaultPort is the NVMe-oF RDMA service port (IANA 4420).
	DefaultPort = "4420"
	// DefaultInCapsuleDataSize is the default in-capsule data size of I/O
	// queues (nvmet: one page).
	DefaultInCapsuleDataSize = 4096
	// MaxInCapsuleDataSize is the largest in-capsule data size (nvmet: 16 KiB).
	MaxInCapsuleDataSize = 16384
	// DefaultMaxDataTransfer is the default largest transfer of one command:
	// 1 MiB (MDTS 8 with a 4 KiB minimum page size), as nvmet. A queue
	// registers data buffers by what it has in flight (a 1 MiB chunk at
	// Connect, then doubling), so the size costs neither connect time nor
	// memory for queues doing small I/O.
	DefaultMaxDataTransfer = 1 << 20
	// MaxDataTransferLimit is the largest MaxDataTransfer: a keyed SGL
	// length is 24 bits, rounded down to whole 4 KiB pages.
	MaxDataTransferLimit = 16<<20 - 4096
	// DefaultMaxQueueDepth is the default I/O queue depth.
	DefaultMaxQueueDepth = 128
	// AdminQueueDepth is the largest admin queue (NVME_AQ_DEPTH).
	AdminQueueDepth = 32
	// PollWaitEpoll and PollWaitChannel are the values of Config.PollWait.
	PollWaitEpoll   = "epoll"
	PollWaitChannel = "channel"
	// DefaultPollSpins is the default Config.PollSpins.
	DefaultPollSpins = 32
	// DefaultConnectTimeout is the default Config.ConnectTimeout.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxUnconnectedQueues is the default
	// Config.MaxUnconnectedQueues.
	DefaultMaxUnconnectedQueues = 1024
	// DefaultMaxUnconnectedPerHost is the default
	// Config.MaxUnconnectedPerHost: above the I/O queues one Linux host
	// opens per controller before it sends their Connects (one per CPU).
	DefaultMaxUnconnectedPerHost = 256
	// DefaultMaxDataBufferBytes is the default Config.MaxDataBufferBytes.
	DefaultMaxDataBufferBytes = 1 << 30
	// DefaultDrainTimeout bounds how long Close waits for in-flight commands
	// of one queue before it disconnects the queue anyway.
	DefaultDrainTimeout = 10 * time.Second
)

// Config configures a Listener.
type Config struct {
	// Provider is the verbs implementation (required).
	Provider verbs.Provider
	// Target is the core that executes commands (required).
	Target *target.Target
	// Addr is the listen address "host:port"; the port defaults to 4420
	// when Addr has none ("192.0.2.1" → "192.0.2.1:4420").
	Addr string
	// PortID is the NVMe-oF port ID registered with the target.
	PortID uint16
	// InCapsuleDataSize is the in-capsule data accepted per I/O command
	// (multiple of 16, ≤ MaxInCapsuleDataSize; 0 → default; negative → none).
	// The admin queue accepts no in-capsule data (as nvmet).
	InCapsuleDataSize int
	// MaxDataTransfer is the largest data transfer of one command (MDTS):
	// a multiple of 4096 in [4096, MaxDataTransferLimit]; 0 → default.
	MaxDataTransfer int
	// MaxQueueDepth is the largest I/O queue (entries); 0 → default. It is
	// clamped to the smallest device MaxQPWR.
	MaxQueueDepth int
	// DrainTimeout bounds Close's graceful drain per queue; 0 → default.
	DrainTimeout time.Duration
	// ConnectTimeout is how long a connection may stay without a
	// successful Fabrics Connect (from its connect request) before it is
	// disconnected; 0 → DefaultConnectTimeout, negative → no limit.
	ConnectTimeout time.Duration
	// MaxUnconnectedQueues caps the connections between their connect
	// request and a successful Fabrics Connect; more are refused with a
	// CM reject (no resources). 0 → DefaultMaxUnconnectedQueues,
	// negative → no cap.
	MaxUnconnectedQueues int
	// MaxDataBufferBytes caps the data buffer memory all queues register
	// beyond the first chunk each gets at Connect (1 MiB, or one buffer
	// when MaxDataTransfer is larger). A queue registers more buffers as
	// its commands in flight need them, up to one per queue entry; past
	// the cap its commands wait for its own buffers. 0 →
	// DefaultMaxDataBufferBytes, negative → no cap.
	MaxDataBufferBytes int64
	// MaxUnconnectedPerHost is MaxUnconnectedQueues per host address.
	// 0 → DefaultMaxUnconnectedPerHost, negative → no cap.
	MaxUnconnectedPerHost int
	// PollSpins is the most consecutive empty polls of the CQ (yielding
	// the processor in between) a queue's poller makes before it arms the
	// CQ and sleeps on its completion channel; the poller adapts its
	// budget below this to how often spinning found work. More spins lower latency
	// under light load and burn more CPU between bursts; an idle queue
	// always ends up asleep and costs no CPU. 0 → DefaultPollSpins;
	// negative → sleep as soon as a poll finds nothing.
	PollSpins int
	// PollQuietAfter makes a queue whose steps found nothing this many
	// times in a row go quiet: its poll group stops polling its CQs until
	// it has something to do (quiet.go), so idle connections cost a busy
	// group nothing. Only with PollWait channel. 0 → off, the default:
	// in the lab's 1-vCPU A/B (docs/design.md §3) it did not make
	// replicated writes faster (the one thing it was tried for); negative
	// is invalid.
	PollQuietAfter int
	// PollClean: a busy queue whose CQs the group armed and polled empty
	// is not polled while their arms hold (clean.go; only with PollWait
	// channel). nil → on.
	PollClean *bool
	// PollWait is how an idle poll group sleeps: PollWaitChannel (the
	// default) parks it on a Go channel that the CQs' event goroutines
	// and everything else signal (one goroutine hand-off per wake-up);
	// PollWaitEpoll (where the provider's CQs implement verbs.FDNotifier)
	// sleeps in epoll_wait on its CQs' completion channels and a bell
	// eventfd, so the kernel wakes it directly: first in bounded raw waits
	// that keep its P (groupwait_linux.go: the runtime's monitor then
	// stays quiet), then, idle for longer, in a blocking wait; each group
	// reserves a P (nbsys.ReserveP). Lab A/Bs against the channel
	// (1-vCPU guest) disagree: 2026-12-06-0328 (3 rounds) QD1 1.21–1.27×
	// in every round but QD32 0.82–0.84×; -0435 (5 rounds, three on a
	// busy host) QD1 reads 0.51× (0.29–1.09), QD32 0.48–0.63×. The channel
	// is the default; epoll is an experiment (docs/design.md §3).
	PollWait string
	// PollGroups is the number of poll groups: pollers that each own many
	// queues (queues are assigned at connect to the group with the
	// fewest). 0 → nbsys.Procs(): one per core Go runs on (GOMAXPROCS
	// before any P kept for a sleeping poller).
	PollGroups int
	// LockPollerThreads locks each poll group to an OS thread
	// (runtime.LockOSThread) and makes it spin without yielding the
	// processor (runtime.Gosched on a locked thread would hand the thread
	// off through the kernel); its spinning stays bounded by the adaptive
	// budget. nil or false → pollers are ordinary goroutines that yield
	// while they spin: on a shared host (2 cores, load 9–14) locked
	// pollers were ~20% slower in BenchmarkRead4KNull (n=36 interleaved in
	// both orders, p=0.045), as every sleep and wake of a locked goroutine
	// hands its thread off through the kernel. Lock them when they have
	// cores to themselves.
	LockPollerThreads *bool
	// SendWithInvalidate selects how a command whose keyed SGL asked for
	// remote invalidation (subtype 0xF) is answered: true → SEND_WITH_INV
	// carrying the host's rkey (the host then skips its LOCAL_INV); false
	// → plain SEND (the host invalidates the key itself, as it must when
	// the completion did not). nil → true when the device has
	// verbs.CapSendWithInv. Without that capability plain SEND is used
	// whatever this says.
	SendWithInvalidate *bool
	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger

	// core replaces Target in tests (fake cores); hooks observe the poller.
	core  coreTarget
	hooks *testHooks
	// mrChunk replaces regmem.MaxChunk as the memory region size limit in
	// tests (several regions per queue without gigabytes of memory).
	mrChunk int
}

// normalize fills defaults and validates c. devMaxQPWR is the smallest
// MaxQPWR of the provider's devices.
func (c *Config) normalize(devMaxQPWR int) error {
	if c.Provider == nil {
		return fmt.Errorf("%w: Provider is nil", ErrInvalidConfig)
	}
	if c.Target == nil && c.core == nil {
		return fmt.Errorf("%w: Target is nil", ErrInvalidConfig)
	}
	addr, err := withDefaultPort(c.Addr)
	if err != nil {
		return err
	}
	c.Addr = addr
	switch {
	case c.InCapsuleDataSize == 0:
		c.InCapsuleDataSize = DefaultInCapsuleDataSize
	case c.InCapsuleDataSize < 0:
		c.InCapsuleDataSize = 0
	case c.InCapsuleDataSize > MaxInCapsuleDataSize || c.InCapsuleDataSize%16 != 0:
		return fmt.Errorf("%w: InCapsuleDataSize %d (multiple of 16, at most %d)",
			ErrInvalidConfig, c.InCapsuleDataSize, MaxInCapsuleDataSize)
	}
	if c.MaxDataTransfer == 0 {
		c.MaxDataTransfer = DefaultMaxDataTransfer
	}
	if c.MaxDataTransfer < 4096 || c.MaxDataTransfer > MaxDataTransferLimit || c.MaxDataTransfer%4096 != 0 {
		return fmt.Errorf("%w: MaxDataTransfer %d (multiple of 4096 in [4096, %d])",
			ErrInvalidConfig, c.MaxDataTransfer, MaxDataTransferLimit)
	}
	if c.MaxQueueDepth == 0 {
		c.MaxQueueDepth = DefaultMaxQueueDepth
	}
	if c.MaxQueueDepth < 2 || c.MaxQueueDepth > 65535 {
		return fmt.Errorf("%w: MaxQueueDepth %d (2..65535)", ErrInvalidConfig, c.MaxQueueDepth)
	}
	if devMaxQPWR > 0 && c.MaxQueueDepth > devMaxQPWR {
		c.MaxQueueDepth = devMaxQPWR
	}
	if c.MaxQueueDepth < 2 {
		return fmt.Errorf("%w: device MaxQPWR %d below 2", ErrInvalidConfig, devMaxQPWR)
	}
	if c.PollGroups <= 0 {
		c.PollGroups = nbsys.Procs()
	}
	switch c.PollWait {
	case "":
		c.PollWait = PollWaitChannel
	case PollWaitEpoll, PollWaitChannel:
	default:
		return fmt.Errorf("%w: PollWait %q (%s or %s)", ErrInvalidConfig, c.PollWait, PollWaitEpoll, PollWaitChannel)
	}
	if c.PollQuietAfter < 0 {
		return fmt.Errorf("%w: PollQuietAfter %d (0: off)", ErrInvalidConfig, c.PollQuietAfter)
	}
	if c.PollSpins == 0 { // negative stays: no spinning (normalize is idempotent)
		c.PollSpins = DefaultPollSpins
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	// Negative limits stay negative: "none" (normalize is idempotent).
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxUnconnectedQueues == 0 {
		c.MaxUnconnectedQueues = DefaultMaxUnconnectedQueues
	}
	if c.MaxDataBufferBytes == 0 {
		c.MaxDataBufferBytes = DefaultMaxDataBufferBytes
	}
	if c.MaxUnconnectedPerHost == 0 {
		c.MaxUnconnectedPerHost = DefaultMaxUnconnectedPerHost
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// withDefaultPort appends DefaultPort to an address without a port.
func withDefaultPort(addr string) (string, error) {
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr, nil
	}
	host := addr
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	out := net.JoinHostPort(host, DefaultPort)
	if _, _, err := net.SplitHostPort(out); err != nil {
		return "", fmt.Errorf("%w: Addr %q: %v", ErrInvalidConfig, addr, err)
	}
	return out, nil
}
