package tcp

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"
)

// Defaults and limits of Config.
const (
	// DefaultPort is the NVMe/TCP I/O controller port (IANA 4420).
	DefaultPort = "4420"
	// DiscoveryPort is the NVMe/TCP discovery port (IANA 8009).
	DiscoveryPort = "8009"
	// DefaultInCapsuleDataSize is the in-capsule data an I/O command may
	// carry (IOCCSZ = (64 + 8192) / 16): a 4 KiB or 8 KiB write needs no
	// R2T round trip.
	DefaultInCapsuleDataSize = 8192
	// MaxInCapsuleDataSize bounds InCapsuleDataSize (nvmet's default).
	MaxInCapsuleDataSize = 16384
	// AdminInCapsuleDataSize is what an admin command may carry in its
	// capsule: NVMe/TCP fixes the admin capsule at 8 KiB of data
	// (Linux NVME_TCP_ADMIN_CCSZ), so the host sends Connect data
	// in-capsule.
	AdminInCapsuleDataSize = 8192
	// DefaultMaxDataTransfer is the default largest transfer of one
	// command (MDTS 8 with 4 KiB pages), as the RDMA binding.
	DefaultMaxDataTransfer = 1 << 20
	// MaxDataTransferLimit bounds MaxDataTransfer.
	MaxDataTransferLimit = 16 << 20
	// DefaultMaxH2CData is the default MAXH2CDATA: the most data one
	// H2CData PDU may carry.
	DefaultMaxH2CData = 128 << 10
	// DefaultMaxQueueDepth is the default largest I/O queue.
	DefaultMaxQueueDepth = 128
	// AdminQueueDepth is the largest admin queue (NVME_AQ_DEPTH).
	AdminQueueDepth = 32
	// DefaultConnectTimeout bounds the time from accept to a successful
	// Fabrics Connect.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMaxUnconnected is the default Config.MaxUnconnected.
	DefaultMaxUnconnected = 1024
	// DefaultMaxUnconnectedPerHost is the default
	// Config.MaxUnconnectedPerHost: above the I/O queues one Linux host
	// opens per controller before their Connects complete (one per CPU).
	DefaultMaxUnconnectedPerHost = 256
	// DefaultDrainTimeout bounds how long Close waits for one
	// connection's commands in flight.
	DefaultDrainTimeout = 10 * time.Second
	// DefaultZeroCopySendMin is the read data one write must carry to go
	// out zero-copy: below it, copying into the socket costs less than
	// pinning the pages and waiting for the notice.
	DefaultZeroCopySendMin = 32 << 10
	// DefaultPollSpins is the default Config.PollSpins: no spinning. Two
	// lab A/Bs of 512 passes against none disagreed (docs/design.md §4).
	DefaultPollSpins = -1
	// termWriteTimeout bounds the write of a C2HTermReq (and whatever is
	// queued before it) to a host that does not read.
	termWriteTimeout = 5 * time.Second
	// preConnectDataLimit is the largest data buffer a command gets before
	// the queue's Fabrics Connect succeeded (Connect data is 1,024 bytes):
	// a connection that never connects pins kilobytes, not depth × MDTS.
	preConnectDataLimit = 8192
	// preConnectSlots is how many commands a connection may have
	// outstanding before its Fabrics Connect succeeded (a host sends one,
	// the Connect): with preConnectDataLimit and the in-capsule limit it
	// bounds an unconnected connection's buffers to tens of kilobytes.
	preConnectSlots = 4
)

// ErrInvalidConfig reports a Config that cannot be used.
var ErrInvalidConfig = errors.New("tcp: invalid config")

// Config configures a Listener.
type Config struct {
	// Target executes the commands (required): a *target.Target (Core is
	// the part of it this package uses).
	Target Core
	// Addr is the listen address "host:port"; the port defaults to 4420.
	Addr string
	// PortID is the NVMe-oF port ID registered with the target.
	PortID uint16
	// InCapsuleDataSize is the in-capsule data accepted per I/O command
	// (multiple of 16, ≤ MaxInCapsuleDataSize; 0 → default; negative →
	// none). The admin queue always accepts AdminInCapsuleDataSize.
	InCapsuleDataSize int
	// MaxDataTransfer is the largest data transfer of one command (MDTS):
	// a multiple of 4096 in [8192, MaxDataTransferLimit]; 0 → default.
	MaxDataTransfer int
	// MaxH2CData is MAXH2CDATA, announced in ICResp: the most data one
	// H2CData PDU may carry; a multiple of 4 ≥ 4096; 0 → default.
	MaxH2CData int
	// MaxQueueDepth is the largest I/O queue; 0 → default.
	MaxQueueDepth int
	// ConnectTimeout bounds the time from accept to a successful Fabrics
	// Connect (ICReq included); 0 → default, negative → none.
	ConnectTimeout time.Duration
	// DrainTimeout bounds Close's graceful drain per connection; 0 →
	// default.
	DrainTimeout time.Duration
	// MaxUnconnected caps the connections between accept and a
	// successful Fabrics Connect; one more is closed at once (logged,
	// counted in Stats.Refused). MaxUnconnectedPerHost is the same cap
	// per host address. 0 → default, negative → no cap.
	MaxUnconnected        int
	MaxUnconnectedPerHost int
	// ZeroCopySendMin: a write that carries at least this many bytes of
	// read data (C2HData of one or more commands) is sent with io_uring's
	// zero-copy sendmsg (Linux ≥ 6.1; elsewhere, and where the kernel
	// refuses it, every write copies). 0 → DefaultZeroCopySendMin;
	// negative → never. See docs/tcp-zero-copy.md.
	ZeroCopySendMin int
	// PollSpins: the most passes (a yield, a poll of the last batch's
	// backends, a look at the process's parked descriptors,
	// internal/nbsys) an I/O queue's reader makes on an empty socket
	// before it parks in the runtime's poller to wait for its host's next
	// PDU; passes that answer I/O do not count; the budget adapts
	// between 0 and PollSpins (spin_linux.go). 0 → DefaultPollSpins
	// (park at once); negative → park at once. Linux only; an experiment.
	PollSpins int
	// Logger receives connection events; nil discards them.
	Logger *slog.Logger

	// drained, when set (tests), is called by Close once every
	// connection was told to drain.
	drained func()
}

func (c *Config) normalize() error {
	if c.Target == nil {
		return fmt.Errorf("%w: Target is nil", ErrInvalidConfig)
	}
	if c.Addr == "" {
		return fmt.Errorf("%w: Addr is empty", ErrInvalidConfig)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		c.Addr = net.JoinHostPort(c.Addr, DefaultPort)
	}
	switch {
	case c.InCapsuleDataSize == 0:
		c.InCapsuleDataSize = DefaultInCapsuleDataSize
	case c.InCapsuleDataSize < 0:
		c.InCapsuleDataSize = 0
	case c.InCapsuleDataSize > MaxInCapsuleDataSize || c.InCapsuleDataSize%16 != 0:
		return fmt.Errorf("%w: InCapsuleDataSize %d (multiple of 16, at most %d)", ErrInvalidConfig,
			c.InCapsuleDataSize, MaxInCapsuleDataSize)
	}
	if c.MaxDataTransfer == 0 {
		c.MaxDataTransfer = DefaultMaxDataTransfer
	}
	if c.MaxDataTransfer < 8192 || c.MaxDataTransfer > MaxDataTransferLimit || c.MaxDataTransfer%4096 != 0 {
		return fmt.Errorf("%w: MaxDataTransfer %d (multiple of 4096 in [8192, %d])", ErrInvalidConfig,
			c.MaxDataTransfer, MaxDataTransferLimit)
	}
	if c.MaxH2CData == 0 {
		c.MaxH2CData = DefaultMaxH2CData
	}
	if c.MaxH2CData < 4096 || c.MaxH2CData%4 != 0 || int64(c.MaxH2CData) > 1<<31 {
		return fmt.Errorf("%w: MaxH2CData %d (multiple of 4, at least 4096)", ErrInvalidConfig, c.MaxH2CData)
	}
	if c.MaxQueueDepth == 0 {
		c.MaxQueueDepth = DefaultMaxQueueDepth
	}
	if c.MaxQueueDepth < 2 || c.MaxQueueDepth > 65535 {
		return fmt.Errorf("%w: MaxQueueDepth %d (2..65535)", ErrInvalidConfig, c.MaxQueueDepth)
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxUnconnected == 0 {
		c.MaxUnconnected = DefaultMaxUnconnected
	}
	if c.MaxUnconnectedPerHost == 0 {
		c.MaxUnconnectedPerHost = DefaultMaxUnconnectedPerHost
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	if c.ZeroCopySendMin == 0 {
		c.ZeroCopySendMin = DefaultZeroCopySendMin
	}
	if c.PollSpins == 0 {
		c.PollSpins = DefaultPollSpins
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
