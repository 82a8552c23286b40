package verbs

import (
	"context"
	"errors"
)

// Sentinel errors. Providers wrap them with detail; test with errors.Is.
var (
	// ErrNoDevice: no RDMA device on this host (rdma-core reports ENOSYS or
	// ENODEV when the kernel has no RDMA support).
	ErrNoDevice = errors.New("verbs: no RDMA device")
	// ErrNotSupported: the device or its capability profile lacks the
	// feature (for example SEND_WITH_INV from userspace on PVRDMA).
	ErrNotSupported = errors.New("verbs: operation not supported by device")
	// ErrInvalid: an argument is outside the device's limits (too many SGEs,
	// queue larger than max_qp_wr, MR larger than max_mr_size...).
	ErrInvalid = errors.New("verbs: invalid argument")
	// ErrQueueFull: posting would exceed the queue's capacity (ENOMEM from
	// ibv_post_send / ibv_post_recv).
	ErrQueueFull = errors.New("verbs: work queue full")
	// ErrQPState: the QP is not in a state that accepts this post (a send
	// before the connection is established). As in libibverbs, posts to a
	// QP in the error state are accepted and complete with WCWRFlushErr.
	ErrQPState = errors.New("verbs: queue pair in wrong state")
	// ErrClosed: the object was closed.
	ErrClosed = errors.New("verbs: closed")
	// ErrDisconnected: the connection was disconnected by either side.
	ErrDisconnected = errors.New("verbs: disconnected")
	// ErrDeviceRemoved: the device went away (RDMA_CM_EVENT_DEVICE_REMOVAL).
	ErrDeviceRemoved = errors.New("verbs: device removed")
	// ErrUnreachable: address or route resolution failed, or no listener at
	// the address (RDMA_CM_EVENT_UNREACHABLE / ADDR_ERROR / ROUTE_ERROR).
	ErrUnreachable = errors.New("verbs: unreachable")
	// ErrCQOverrun: more completions arrived than the CQ could hold; the CQ
	// and every QP using it are in the error state.
	ErrCQOverrun = errors.New("verbs: completion queue overrun")
)

// RejectError is returned by ConnID.Connect when the passive side rejected
// the connection (RDMA_CM_EVENT_REJECTED). PrivateData is the consumer
// reject data (for NVMe-oF, the 4-byte rdma_cm reject record).
type RejectError struct {
	PrivateData []byte
	// Consumer is true when the peer application rejected (rdma_reject);
	// false when the provider or fabric rejected (no listener, timeout).
	Consumer bool
}

func (e *RejectError) Error() string {
	if e.Consumer {
		return "verbs: connection rejected by peer"
	}
	return "verbs: connection rejected"
}

// Provider is an implementation of verbs: soft, or ibverbs.
type Provider interface {
	// Name identifies the provider ("soft", "ibverbs").
	Name() string
	// Devices lists the RDMA devices. It returns ErrNoDevice (wrapped) when
	// the host has no RDMA support at all.
	Devices() ([]Device, error)
	// Listen binds a passive connection-management endpoint to addr
	// ("host:port"), like rdma_bind_addr + rdma_listen.
	Listen(addr string, opts ListenOptions) (Listener, error)
	// Resolve creates an active connection-management ID bound to the local
	// device that routes to addr, like rdma_create_id + rdma_resolve_addr +
	// rdma_resolve_route. The caller then creates a PD, CQs and a QP on
	// ID.Device() and calls ID.Connect.
	Resolve(ctx context.Context, addr string, opts ResolveOptions) (ConnID, error)
}

// ListenOptions tune a Listener.
type ListenOptions struct {
	// Backlog bounds connect requests not yet taken by Accept (0: provider
	// default).
	Backlog int
}

// ResolveOptions tune address resolution.
type ResolveOptions struct {
	// LocalAddr optionally binds the source address ("ip" or "ip:port").
	LocalAddr string
}

// Listener yields incoming connection requests (RDMA_CM_EVENT_CONNECT_REQUEST).
type Listener interface {
	// Accept blocks for the next connect request. The returned ID is bound
	// to the device that received the request; the caller must answer it
	// with ConnID.Accept or ConnID.Reject (and Close the ID when done).
	Accept(ctx context.Context) (*ConnRequest, error)
	// Addr is the bound address, with the actual port when 0 was asked.
	Addr() string
	Close() error
}

// ConnRequest is a connect request received by a Listener.
type ConnRequest struct {
	ID ConnID
	// Param carries the active side's private data, responder resources and
	// initiator depth.
	Param ConnParam
}

// ConnParam is rdma_conn_param.
type ConnParam struct {
	// PrivateData: at most MaxPrivateData bytes in a request or accept, at
	// most MaxRejectPrivateData bytes in a reject.
	PrivateData []byte
	// ResponderResources is the number of incoming RDMA READ requests this
	// side will accept outstanding (IRD).
	ResponderResources uint8
	// InitiatorDepth is the number of RDMA READ requests this side will
	// issue outstanding (ORD).
	InitiatorDepth uint8
	// RetryCount and RNRRetryCount (7 = infinite) as in rdma_conn_param.
	RetryCount    uint8
	RNRRetryCount uint8
	FlowControl   bool
}

// Private data limits of RDMA CM over RoCE / IB.
const (
	MaxPrivateData       = 56  // REQ/REP private data bytes usable by the consumer
	MaxRejectPrivateData = 148 // REJ private data bytes
)

// ConnID is an RDMA connection-management identifier (rdma_cm_id) with at
// most one QP.
type ConnID interface {
	// Device is the device the ID is bound to.
	Device() Device
	// CreateQP creates the RC queue pair of this ID (rdma_create_qp). The
	// actual capabilities may exceed the requested ones; see QueuePair.Cap.
	CreateQP(pd ProtectionDomain, attr QPInitAttr) (QueuePair, error)
	// QP returns the QP created by CreateQP, or nil.
	QP() QueuePair
	// Connect (active side) sends the connect request and blocks until the
	// connection is established, rejected (*RejectError) or ctx ends. It
	// returns the passive side's accept parameters.
	Connect(ctx context.Context, p ConnParam) (ConnParam, error)
	// Accept (passive side) accepts the request; the connection is
	// established when Accept returns nil.
	Accept(ctx context.Context, p ConnParam) error
	// Reject (passive side) refuses the request with private data.
	Reject(privateData []byte) error
	// Disconnect moves the QP to the error state (outstanding work requests
	// flush) and notifies the peer. It is idempotent.
	Disconnect() error
	// Done is closed when the connection ends for any reason (either side
	// disconnected, device removal, ID closed).
	Done() <-chan struct{}
	// Err reports why Done closed (ErrDisconnected, ErrDeviceRemoved,
	// ErrClosed), or nil while connected.
	Err() error
	LocalAddr() string
	RemoteAddr() string
	// Close disconnects, destroys the QP and the ID.
	Close() error
}

// Device is an open RDMA device context (ibv_context).
type Device interface {
	Name() string
	Attr() DeviceAttr
	AllocPD() (ProtectionDomain, error)
	// CreateCQ creates a completion queue of at least cqe entries on
	// completion vector vector (0 ≤ vector < Attr().NumCompVectors).
	CreateCQ(cqe int, vector int) (CompletionQueue, error)
}

// DeviceCaps are capability bits a consumer must check before relying on a
// feature.
type DeviceCaps uint32

const (
	// CapMemMgtExtensions: the device reports IBV_DEVICE_MEM_MGT_EXTENSIONS
	// (kernel consumers can fast-register; PVRDMA reports it).
	CapMemMgtExtensions DeviceCaps = 1 << iota
	// CapSendWithInv: userspace may post OpSendWithInv.
	CapSendWithInv
	// CapUserFastReg: userspace fast-register / local-invalidate work requests.
	CapUserFastReg
	// CapSRQ: shared receive queues.
	CapSRQ
	// CapRNRNakGen: the device generates RNR NAKs (receiver not ready).
	CapRNRNakGen
)

// Has reports whether all bits of c2 are set.
func (c DeviceCaps) Has(c2 DeviceCaps) bool { return c&c2 == c2 }

// DeviceAttr mirrors the ibv_device_attr fields the stack uses.
type DeviceAttr struct {
	FWVersion       string
	VendorID        uint32
	VendorPartID    uint32
	MaxMRSize       uint64
	MaxQP           int
	MaxQPWR         int // max work requests per send or receive queue
	MaxSGE          int // max SGEs per send / receive work request
	MaxSGERd        int // max SGEs per RDMA READ work request
	MaxCQ           int
	MaxCQE          int
	MaxMR           int
	MaxPD           int
	MaxQPRdAtom     int // IRD: incoming RDMA READs outstanding per QP
	MaxQPInitRdAtom int // ORD: outgoing RDMA READs outstanding per QP
	MaxInlineData   int // 0: IBV_SEND_INLINE unsupported
	MaxSRQ          int
	NumCompVectors  int
	Caps            DeviceCaps
}

// Access are memory-region access rights (IBV_ACCESS_*).
type Access uint32

const (
	AccessLocalWrite Access = 1 << iota
	AccessRemoteWrite
	AccessRemoteRead
	AccessRemoteAtomic
)

// ProtectionDomain is ibv_pd. QPs and MRs of one PD may be used together;
// a remote access through a QP of another PD fails with WCRemAccessErr.
type ProtectionDomain interface {
	// RegisterMemory registers buf (see the package doc on lifetimes). A
	// remote-write or remote-atomic right requires AccessLocalWrite, as in
	// ibv_reg_mr.
	RegisterMemory(buf []byte, access Access) (MemoryRegion, error)
	// Close deallocates the PD. It fails with ErrInvalid while MRs or QPs
	// still use it.
	Close() error
}

// MemoryRegion is ibv_mr.
type MemoryRegion interface {
	// Buf is the registered memory.
	Buf() []byte
	// Addr is the address of Buf()[0] as used in SGEs and remote operations.
	Addr() uint64
	LKey() uint32
	RKey() uint32
	Access() Access
	// Close deregisters the MR.
	Close() error
}

// SGE is ibv_sge: a span of registered memory.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// Opcode is the work-request opcode (ibv_wr_opcode subset).
type Opcode uint8

const (
	OpRDMAWrite        Opcode = 0 // IBV_WR_RDMA_WRITE
	OpRDMAWriteWithImm Opcode = 1 // IBV_WR_RDMA_WRITE_WITH_IMM
	OpSend             Opcode = 2 // IBV_WR_SEND
	OpSendWithImm      Opcode = 3 // IBV_WR_SEND_WITH_IMM
	OpRDMARead         Opcode = 4 // IBV_WR_RDMA_READ
	OpSendWithInv      Opcode = 9 // IBV_WR_SEND_WITH_INV
)

// SendFlags are IBV_SEND_* flags.
type SendFlags uint8

const (
	SendFence     SendFlags = 1 << 0
	SendSignaled  SendFlags = 1 << 1
	SendSolicited SendFlags = 1 << 2
	SendInline    SendFlags = 1 << 3
)

// SendWR is ibv_send_wr.
type SendWR struct {
	ID     uint64
	Opcode Opcode
	Flags  SendFlags
	SGL    []SGE
	// RemoteAddr and RKey name the peer's memory for RDMA READ / WRITE.
	RemoteAddr uint64
	RKey       uint32
	// Imm is the immediate data for *WithImm opcodes.
	Imm uint32
	// InvalidateRKey is the peer rkey to invalidate for OpSendWithInv.
	InvalidateRKey uint32
}

// RecvWR is ibv_recv_wr.
type RecvWR struct {
	ID  uint64
	SGL []SGE
}

// QPCap is ibv_qp_cap.
type QPCap struct {
	MaxSendWR     int
	MaxRecvWR     int
	MaxSendSGE    int
	MaxRecvSGE    int
	MaxInlineData int
}

// QPInitAttr is ibv_qp_init_attr for an RC QP.
type QPInitAttr struct {
	SendCQ CompletionQueue
	RecvCQ CompletionQueue
	Cap    QPCap
	// SignalAll makes every send work request generate a completion
	// (sq_sig_all); otherwise only SendSignaled ones do.
	SignalAll bool
}

// QueuePair is an RC ibv_qp.
type QueuePair interface {
	// Num is the QP number.
	Num() uint32
	// Cap is the actual capability of the QP.
	Cap() QPCap
	// PostSend posts work requests in order. It returns the number posted
	// and, when that is less than len(wrs), the error of the first one not
	// posted (like bad_wr): ErrQueueFull, ErrInvalid, ErrNotSupported,
	// ErrQPState.
	PostSend(wrs []SendWR) (int, error)
	// PostRecv posts receive work requests, with the same contract.
	PostRecv(wrs []RecvWR) (int, error)
	// Close destroys the QP; outstanding work requests complete with
	// WCWRFlushErr.
	Close() error
}

// CompletionQueue is ibv_cq with its completion channel.
type CompletionQueue interface {
	// Poll copies up to len(wc) completions into wc and returns how many.
	// It never blocks. It returns ErrCQOverrun once the CQ overflowed.
	Poll(wc []WorkCompletion) (int, error)
	// ReqNotify arms the CQ: the next completion added after the call sends
	// one token on Notify(). If the CQ already holds completions when it is
	// armed, the token is sent at once (so Wait after an empty Poll cannot
	// miss a completion that landed in between); a provider whose hardware
	// does not do this must emulate it.
	ReqNotify() error
	// Notify delivers completion-event tokens (capacity 1, never closed
	// while the CQ lives).
	Notify() <-chan struct{}
	// Depth is the number of entries.
	Depth() int
	Close() error
}

// NotifyRouter is implemented by CQs whose completion-event tokens can go
// to a channel the consumer owns, so that one goroutine can sleep on a
// single channel for many CQs (a poll group) without a goroutine per CQ
// relaying them. Every provider implements it (checked by verbstest).
type NotifyRouter interface {
	// RouteNotify makes ch the channel later tokens are sent to (a
	// non-blocking send, as on the CQ's own channel: ch should have
	// capacity ≥ 1) and the one Notify returns; nil routes them back to
	// the CQ's own channel. A token already on the old channel stays
	// there. Safe from any goroutine, concurrently with completions.
	RouteNotify(ch chan struct{})
}

// ArmReporter is implemented by CQs that report whether the arm of their
// last ReqNotify still holds: no completion event has been delivered
// since (the provider clears it before it sends the event's token, on
// the CQ's own channel or a routed one). A consumer that armed a CQ and
// then polled it empty, and finds it still armed, knows that no
// completion has arrived since, without polling it: a poll group lets
// its idle queues sit out its passes that way. While detached
// (FDNotifier) the arm holds until TakeNotify. Every provider implements
// it (checked by verbstest).
type ArmReporter interface {
	Armed() bool
}

// FDNotifier is implemented by CQs whose completion events a consumer can
// wait for on its own epoll set, so that a poll group sleeps in one
// epoll_wait for all its CQs and its other wake-ups and the kernel wakes
// its thread directly, with no goroutine relaying events. Optional:
// consumers fall back to Notify / NotifyRouter. verbstest checks every
// provider that implements it.
type FDNotifier interface {
	// DetachNotify stops the provider's own delivery of completion
	// events: until AttachNotify, an armed CQ's event makes the returned
	// descriptor readable (wait for it level-triggered) instead of
	// sending a token on Notify's channel. The descriptor stays the CQ's:
	// never read or close it, and take it out of any epoll set before
	// AttachNotify or Close. Events the CQ must report outside the arm
	// (an overrun) still send a token on Notify's channel. Not safe
	// concurrently with ReqNotify, TakeNotify or AttachNotify. While
	// detached, ReqNotify on a CQ that already holds completions need not
	// signal them: the consumer polls once more after arming.
	DetachNotify() (fd int, err error)
	// TakeNotify consumes the pending completion event without blocking
	// and reports whether there was one; the CQ is then disarmed (the
	// next ReqNotify arms it). Only while detached; the caller serializes
	// it with ReqNotify.
	TakeNotify() bool
	// AttachNotify returns event delivery to the provider; an event
	// still pending sends its token on Notify's channel.
	AttachNotify() error
}

// Wait blocks until cq has a completion to poll, or ctx ends. It arms the
// CQ, so a subsequent Poll should find at least one completion (unless
// another goroutine took it).
func Wait(ctx context.Context, cq CompletionQueue) error {
	if err := cq.ReqNotify(); err != nil {
		return err
	}
	select {
	case <-cq.Notify():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
