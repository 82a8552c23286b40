// Package soft is a pure-Go verbs provider: a faithful test double of an
// RDMA RC NIC plus RDMA connection management. The NVMe-oF target and
// initiator are tested over it, so it enforces the rules hardware enforces,
// and a broken rule fails the way it does on hardware: a work-completion
// status, a QP in the error state, or an error from a post — never a panic.
//
// # Objects and ownership
//
// New returns a Provider with one device whose attributes come from a
// Profile (ProfileDefault, rxe/mlx5-like; ProfilePVRDMA, the VMware PVRDMA
// device as a guest's userspace sees it), optionally adjusted by
// Options.Tune. Keys (lkey ≠ rkey) and QP numbers are random per device so
// that key mix-ups fail. MemoryRegion.Addr is the address of Buf()[0].
//
// Listen and Resolve use TCP sockets, or with Options.Fabric an in-process
// network (NewFabric) where providers reach each other's listen addresses.
// Each connected QP owns one transport connection and two goroutines, its
// soft NIC: the tx engine (writes requests and responses) and the rx engine
// (executes the peer's requests against local memory, applies ACKs, NAKs
// and READ responses). Remote operations need no help from the responder
// application. Provider.Close removes the device: connections end with
// verbs.ErrDeviceRemoved and every goroutine of the provider has stopped
// when it returns. ConnID.Close and QueuePair.Close of a connected QP send
// DISC and return once the QP's engines have stopped: normally as soon as
// the peer answers, at most 2 s later if it does not. PostSend, PostRecv
// and Poll never block; CompletionQueue.ReqNotify on a CQ that already
// holds completions signals at once. On Linux a CQ implements
// verbs.FDNotifier with an eventfd (made by the first DetachNotify, closed
// with the CQ): while detached, the armed event writes it instead of
// sending a token, as rdma-core's completion channel becomes readable.
//
// Locks on the data path: posters of one queue are serialized by that
// queue's post lock, which no engine takes; a post validates its work
// requests and fills the free slots past the queue's tail without the QP
// lock, then holds the QP lock only to check the state and publish the new
// tail. Keys are looked up in an immutable key table swapped whole when an
// MR is registered or closed, so neither posts nor the engines' remote
// accesses take a device-wide lock.
//
// # Buffer lifetimes
//
// As in package verbs: registered memory belongs to the caller and must stay
// valid until MemoryRegion.Close returns. The engines read and write it
// directly (no copies but the transport's): payloads are written from the
// SGEs with writev and read straight into receives, MRs and READ
// destinations. A completion (including a flush) is generated only after
// the engines are done with the WR's memory, so memory may be reused or
// unmapped once its completion is polled. MemoryRegion.Close waits for
// remote accesses in progress through that MR. The soft provider accepts
// any []byte; Go heap memory is fine.
//
// # Rules enforced
//
//   - Limits of the profile at create and post time: QP depth ≤ MaxQPWR,
//     SGEs ≤ MaxSGE (READ: MaxSGERd), CQ ≤ MaxCQE, vector < NumCompVectors,
//     MR ≤ MaxMRSize (PVRDMA: ≤ 262,144 4 KiB pages), inline data ≤ the QP's
//     MaxInlineData (PVRDMA: none, ErrNotSupported), SEND_WITH_INV only with
//     CapSendWithInv (else ErrNotSupported), object counts (MaxQP, MaxMR…).
//   - ibv_reg_mr access rules; a PD cannot close while MRs or QPs use it; a
//     CQ cannot close while QPs use it.
//   - Local SGEs (lkey of this PD, bounds with overflow-safe arithmetic,
//     AccessLocalWrite for receives and READ destinations) are checked at
//     post time but reported as on hardware: a bad send WR completes with
//     WCLocProtErr (WCLocLenErr above 2 GiB) once every earlier WR has
//     completed, and the QP moves to the error state; a bad receive is
//     reported when a message lands in it (receive WCLocProtErr, sender
//     WCRemOpErr, both QPs in error).
//   - Queue capacity: at most Cap().MaxSendWR send WRs outstanding, else
//     ErrQueueFull. As in mlx5 and rxe, a slot is freed when the completion
//     of its WR, or of a later WR of the same queue, is polled: an
//     unsignaled WR holds its slot until a later signaled WR's completion
//     is polled (post a signaled WR at least every MaxSendWR WRs), and a CQ
//     at least as deep as the queues using it cannot overrun. The same for
//     receives and MaxRecvWR.
//   - Posting a send before the connection is established is ErrQPState;
//     posting to a QP in the error state is accepted and flushes.
//   - Remote WRITE/READ: the rkey must exist on the responder's device, its
//     MR belong to the responder QP's PD, not be invalidated, cover
//     [addr, addr+len) and grant RemoteWrite / RemoteRead. A violation
//     completes the requester's WR with WCRemAccessErr and moves both QPs
//     to the error state. Zero-length RDMA operations are not checked (as
//     the IB specification says).
//   - SEND consumes the responder's next receive in order. Longer than the
//     receive: responder WCLocLenErr, requester WCRemInvReqErr. No receive:
//     RNR NAK, retried after 20µs doubling up to 4ms, as many times as the
//     QP's RNR retry count (7: forever); exhausted: WCRNRRetryExcErr.
//     SEND_WITH_INV revokes remote access through the named rkey of the
//     responder's PD (a bad rkey: the receive and the requester complete
//     with WCRemInvReqErr, as rxe). WithImm/WithInv show in the receive's
//     Flags, Imm and InvalidatedRKey.
//   - Send completions are generated in posting order, after the responder
//     executed the WR (ACK), READ completions after the data landed.
//     SignalAll and SendSignaled are honoured; errors and flushes always
//     complete. SendFence waits for earlier READs.
//   - RDMA READ depth: the requester keeps at most ORD READs outstanding;
//     later WRs wait in order behind them (with ORD 0 a READ completes with
//     WCLocQPOpErr instead of stalling forever). The responder serves at
//     most IRD READs at a time; excess is a WCRemInvReqErr for the
//     requester and both QPs go to error.
//   - CQ overrun: the completion is lost, Poll returns ErrCQOverrun from
//     then on, and every QP using the CQ moves to the error state.
//
// # Connection management
//
// As librdmacm over RoCE. Connect's ResponderResources / InitiatorDepth
// above the device's MaxQPRdAtom / MaxQPInitRdAtom are ErrInvalid; 255
// means the device maximum. The passive side's ConnRequest.Param shows the
// request from its own point of view (ResponderResources = the active
// side's InitiatorDepth and vice versa); Accept's values above its device
// limits are ErrInvalid, 255 means min(request, device max). Each QP's ORD
// is what the peer accepted as responder resources and its IRD what the
// peer asked as initiator depth, clamped to its own device's limits; each
// QP's RNR retry count is the one the peer sent (IB CM semantics). Private
// data arrives zero-padded to the CM field size: 56 bytes in a request,
// 196 in a reply, 148 in a reject. No listener at the address:
// *verbs.RejectError with Consumer false (the REJ RoCE gives for an unknown
// service); other dial failures: verbs.ErrUnreachable. Disconnect from
// either side closes both Done channels with ErrDisconnected and flushes
// both QPs; closing a Listener leaves established connections alone.
//
// # Listener robustness
//
// A listener's accept loop ends only when the listener closes: an accept
// error (EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, anything) is logged
// to Options.Logger at most once per 10 s and retried after a back-off
// (5 ms doubling up to 1 s). Connections that have not sent their connect
// request are capped (1,024 in all, 64 per peer host) and closed after
// 10 s; connections over a cap are closed at once.
//
// # Fault injection
//
// InjectQPError moves a QP to the error state (the peer finds out at its
// next request: WCRetryExcErr). CutLink pulls the cable of a connection:
// both sides fail their oldest outstanding send WR with WCRetryExcErr,
// flush the rest and close Done with ErrDisconnected. Stats and AwaitRNR
// observe READ depth and RNR behaviour. A malformed frame from the peer
// kills that connection only, with the same effect as CutLink.
//
// # Wire protocol
//
// One byte stream per QP pair carries CM frames (REQ, REP, RTU, REJ) and
// then data frames (SEND, WRITE, READ request/response, ACK, NAK, DISC),
// each a 32-byte header plus payload (see wire.go). The responder answers
// in request order; ACKs are cumulative and coalesced; after an RNR NAK the
// responder drops requests until the NAKed one is retransmitted (go-back-N).
package soft
