package verbstest

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/verbs"
)

// testTimeout is the safety-net deadline of one test; a healthy provider
// finishes each test in milliseconds.
const testTimeout = 20 * time.Second

// Env is what a provider's test supplies for one subtest.
type Env struct {
	// Server accepts connections on Addr; Client connects. They may be the
	// same provider.
	Server, Client verbs.Provider
	// Addr is the listen address for Server ("127.0.0.1:0" picks a port).
	Addr string

	// Optional hooks; tests needing a nil hook are skipped.

	// InjectQPError moves a QP to the error state as an asynchronous QP
	// error would.
	InjectQPError func(verbs.QueuePair) error
	// ReadsHighWater reports the most RDMA READs the QP ever had
	// outstanding as requester.
	ReadsHighWater func(verbs.QueuePair) (int, error)
	// AwaitRNR blocks until the QP received at least n RNR NAKs as
	// requester.
	AwaitRNR func(ctx context.Context, qp verbs.QueuePair, n uint64) error

	// PeerErrorTimeout is how long the provider takes at most to report,
	// to a requester whose responder QP went to the error state, an error
	// completion or a disconnect (IB: at most (RetryCount+1) local ACK
	// timeouts). Zero promises no bound: InjectQPError then waits
	// defaultPeerErrorWait and skips, rather than fails, when nothing
	// arrived (Soft-RoCE in Linux 6.1 never completes the request, see
	// testInjectQPError).
	PeerErrorTimeout time.Duration
	// RemoteInvalidateUserMR says that a SEND_WITH_INV may invalidate an
	// ordinary MR from ProtectionDomain.RegisterMemory (soft). Real
	// devices and rxe only invalidate fast-register MRs and memory
	// windows, which the verbs API does not offer, so without it the suite
	// checks only the capability gating of OpSendWithInv.
	RemoteInvalidateUserMR bool
}

// defaultPeerErrorWait is how long InjectQPError waits for a provider that
// set no Env.PeerErrorTimeout: above the IB bound for the suite's connect
// parameters (retry 7, and the ~2 s ACK timeout rdma_cm picks on RoCE).
const defaultPeerErrorWait = 20 * time.Second

// Run runs the contract suite. newEnv is called once per subtest and should
// register the cleanup of what it creates with t.Cleanup.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, tc := range suite {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newEnv(t))
		})
	}
}

// RunReference runs the reference tests: the exact behaviour the soft
// provider models where the IB specification lets implementations differ
// (the preferred error statuses, remote invalidation of ordinary MRs, the
// shape of the requester's completions after a responder error). They are
// for verbs/soft, which must stay a faithful double; other providers run
// Run only.
func RunReference(t *testing.T, newEnv func(t *testing.T) Env) {
	for _, tc := range reference {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newEnv(t))
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, e Env)
}

var suite = []testCase{
	{"DeviceAttr", testDeviceAttr},
	{"MemoryRegistration", testMemoryRegistration},
	{"ConnectPrivateData", testConnectPrivateData},
	{"ConnectParamLimits", testConnectParamLimits},
	{"Reject", testReject},
	{"NoListener", testNoListener},
	{"ListenerCloseKeepsConnections", testListenerCloseKeepsConnections},
	{"SendBeforeConnect", testSendBeforeConnect},
	{"SendRecvMultiSGE", testSendRecvMultiSGE},
	{"Write", testWrite},
	{"Read", testRead},
	{"LargeTransfers", testLargeTransfers},
	{"WithImm", testWithImm},
	{"SendWithInv", testSendWithInv},
	{"Inline", testInline},
	{"CompletionOrdering", testCompletionOrdering},
	{"NotifyPending", testNotifyPending},
	{"NotifyRouted", testNotifyRouted},
	{"ArmReporter", testArmReporter},
	{"NotifyFD", testNotifyFD},
	{"ReadDepthORD", testReadDepthORD},
	{"RNRRetryExceeded", testRNRRetryExceeded},
	{"RNRRetryForever", testRNRRetryForever},
	{"RemoteAccessErrors", testRemoteAccessErrors},
	{"LocalProtectionError", testLocalProtectionError},
	{"ReceiveTooShort", testReceiveTooShort},
	{"PostToErrorQP", testPostToErrorQP},
	{"InjectQPError", testInjectQPError},
	{"CQOverrun", testCQOverrun},
	{"CQSizedToQueue", testCQSizedToQueue},
	{"DeviceLimits", testDeviceLimits},
	{"PostLimits", testPostLimits},
	{"SendQueueFull", testSendQueueFull},
	{"DisconnectFlushes", testDisconnectFlushes},
	{"CloseNotifiesPeer", testCloseNotifiesPeer},
}

var reference = []testCase{
	{"LocalProtectionErrorStatus", testRefLocalProtectionStatus},
	{"ReceiveTooShortStatus", testRefReceiveTooShortStatus},
	{"SendWithInvUserMR", testRefSendWithInvUserMR},
	{"PeerErrorRetryExceeded", testRefPeerErrorRetryExceeded},
}

// arena hands out mmap'd buffers and unmaps them when the test ends. Create
// it first in a test so its cleanup runs last.
type arena struct {
	t    *testing.T
	maps [][]byte
}

func newArena(t *testing.T) *arena {
	a := &arena{t: t}
	t.Cleanup(func() {
		for _, m := range a.maps {
			if err := syscall.Munmap(m); err != nil {
				t.Errorf("munmap: %v", err)
			}
		}
	})
	return a
}

// alloc returns n zeroed bytes of page-aligned anonymous memory.
func (a *arena) alloc(n int) []byte {
	a.t.Helper()
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		a.t.Fatalf("mmap %d bytes: %v", n, err)
	}
	a.maps = append(a.maps, m)
	return m
}

// side is one end of a connection with its resources.
type side struct {
	t   *testing.T
	id  verbs.ConnID
	dev verbs.Device
	pd  verbs.ProtectionDomain
	scq verbs.CompletionQueue
	rcq verbs.CompletionQueue
	qp  verbs.QueuePair
}

// sideConfig shapes a side's CQs and QP.
type sideConfig struct {
	cap       verbs.QPCap
	sendCQ    int // send CQ entries (0: MaxSendWR+16)
	signalAll bool
}

func defaultCap(a verbs.DeviceAttr) verbs.QPCap {
	return verbs.QPCap{
		MaxSendWR:  min(64, a.MaxQPWR),
		MaxRecvWR:  min(64, a.MaxQPWR),
		MaxSendSGE: min(4, a.MaxSGE),
		MaxRecvSGE: min(4, a.MaxSGE),
	}
}

// newSide creates PD, CQs and QP on id and registers their cleanup (the ID
// closes first, then CQs, then the PD; MRs registered later close earlier).
func newSide(t *testing.T, id verbs.ConnID, cfg sideConfig) *side {
	t.Helper()
	s := &side{t: t, id: id, dev: id.Device()}
	if s.dev == nil {
		t.Fatalf("ID has no device")
	}
	pd, err := s.dev.AllocPD()
	if err != nil {
		t.Fatalf("AllocPD: %v", err)
	}
	s.pd = pd
	t.Cleanup(func() {
		if err := pd.Close(); err != nil {
			t.Errorf("PD close: %v", err)
		}
	})
	if cfg.cap == (verbs.QPCap{}) {
		cfg.cap = defaultCap(s.dev.Attr())
	}
	scqn := cfg.sendCQ
	if scqn == 0 {
		scqn = cfg.cap.MaxSendWR + 16
	}
	s.scq = mustCQ(t, s.dev, scqn)
	s.rcq = mustCQ(t, s.dev, cfg.cap.MaxRecvWR+16)
	qp, err := id.CreateQP(pd, verbs.QPInitAttr{SendCQ: s.scq, RecvCQ: s.rcq, Cap: cfg.cap, SignalAll: cfg.signalAll})
	if err != nil {
		t.Fatalf("CreateQP: %v", err)
	}
	s.qp = qp
	t.Cleanup(func() { id.Close() })
	return s
}

func mustCQ(t *testing.T, d verbs.Device, n int) verbs.CompletionQueue {
	t.Helper()
	cq, err := d.CreateCQ(n, 0)
	if err != nil {
		t.Fatalf("CreateCQ(%d): %v", n, err)
	}
	t.Cleanup(func() {
		if err := cq.Close(); err != nil {
			t.Errorf("CQ close: %v", err)
		}
	})
	return cq
}

// reg registers buf on the side's PD and closes the MR at cleanup.
func (s *side) reg(buf []byte, acc verbs.Access) verbs.MemoryRegion {
	s.t.Helper()
	return regOn(s.t, s.pd, buf, acc)
}

func regOn(t *testing.T, pd verbs.ProtectionDomain, buf []byte, acc verbs.Access) verbs.MemoryRegion {
	t.Helper()
	mr, err := pd.RegisterMemory(buf, acc)
	if err != nil {
		t.Fatalf("RegisterMemory(%d bytes, %#x): %v", len(buf), acc, err)
	}
	t.Cleanup(func() { mr.Close() })
	return mr
}

const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

// sge names buf[off:off+n] of mr.
func sge(mr verbs.MemoryRegion, off, n int) verbs.SGE {
	return verbs.SGE{Addr: mr.Addr() + uint64(off), Length: uint32(n), LKey: mr.LKey()}
}

func (s *side) postSend(wrs ...verbs.SendWR) {
	s.t.Helper()
	n, err := s.qp.PostSend(wrs)
	if err != nil || n != len(wrs) {
		s.t.Fatalf("PostSend: posted %d of %d: %v", n, len(wrs), err)
	}
}

func (s *side) postRecv(wrs ...verbs.RecvWR) {
	s.t.Helper()
	n, err := s.qp.PostRecv(wrs)
	if err != nil || n != len(wrs) {
		s.t.Fatalf("PostRecv: posted %d of %d: %v", n, len(wrs), err)
	}
}

// pairConfig shapes a connection.
type pairConfig struct {
	client, server sideConfig
	// connect and accept default to full READ depth and RNR retry 7.
	connect, accept *verbs.ConnParam
	// beforeAccept runs on the server side after its QP exists, before
	// Accept (e.g. to pre-post receives).
	beforeAccept func(s *side)
}

// pair is an established connection.
type pair struct {
	t        *testing.T
	ctx      context.Context
	mem      *arena
	ln       verbs.Listener
	c, s     *side
	req      *verbs.ConnRequest
	accepted verbs.ConnParam // what Connect returned
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

func listen(t *testing.T, e Env) verbs.Listener {
	t.Helper()
	ln, err := e.Server.Listen(e.Addr, verbs.ListenOptions{})
	if err != nil {
		t.Fatalf("Listen(%s): %v", e.Addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func resolve(t *testing.T, ctx context.Context, e Env, addr string) verbs.ConnID {
	t.Helper()
	id, err := e.Client.Resolve(ctx, addr, verbs.ResolveOptions{})
	if err != nil {
		t.Fatalf("Resolve(%s): %v", addr, err)
	}
	t.Cleanup(func() { id.Close() })
	return id
}

type connectResult struct {
	p   verbs.ConnParam
	err error
}

// startConnect runs Connect on its own goroutine.
func startConnect(ctx context.Context, id verbs.ConnID, p verbs.ConnParam) <-chan connectResult {
	ch := make(chan connectResult, 1)
	go func() {
		r, err := id.Connect(ctx, p)
		ch <- connectResult{r, err}
	}()
	return ch
}

func defaultConnect(a verbs.DeviceAttr) verbs.ConnParam {
	return verbs.ConnParam{
		ResponderResources: uint8(min(16, a.MaxQPRdAtom)),
		InitiatorDepth:     uint8(min(16, a.MaxQPInitRdAtom)),
		RetryCount:         7,
		RNRRetryCount:      7,
	}
}

// connect establishes a connection shaped by cfg.
func connect(t *testing.T, e Env, cfg pairConfig) *pair {
	t.Helper()
	mem := newArena(t) // first, so the memory is unmapped after everything closed
	ctx := testCtx(t)
	p := &pair{t: t, ctx: ctx, mem: mem, ln: listen(t, e)}
	cid := resolve(t, ctx, e, p.ln.Addr())
	p.c = newSide(t, cid, cfg.client)
	cp := defaultConnect(p.c.dev.Attr())
	if cfg.connect != nil {
		cp = *cfg.connect
	}
	ch := startConnect(ctx, cid, cp)
	req, err := p.ln.Accept(ctx)
	if err != nil {
		t.Fatalf("Listener.Accept: %v", err)
	}
	p.req = req
	p.s = newSide(t, req.ID, cfg.server)
	if cfg.beforeAccept != nil {
		cfg.beforeAccept(p.s)
	}
	sa := p.s.dev.Attr()
	ap := verbs.ConnParam{
		ResponderResources: uint8(min(int(req.Param.ResponderResources), sa.MaxQPRdAtom)),
		InitiatorDepth:     uint8(min(int(req.Param.InitiatorDepth), sa.MaxQPInitRdAtom)),
		RetryCount:         7,
		RNRRetryCount:      7,
	}
	if cfg.accept != nil {
		ap = *cfg.accept
	}
	if err := req.ID.Accept(ctx, ap); err != nil {
		t.Fatalf("ConnID.Accept: %v", err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("Connect: %v", r.err)
	}
	p.accepted = r.p
	return p
}

// waitWC waits for exactly n completions on cq and returns them.
func waitWC(t *testing.T, ctx context.Context, cq verbs.CompletionQueue, n int) []verbs.WorkCompletion {
	t.Helper()
	out := make([]verbs.WorkCompletion, 0, n)
	buf := make([]verbs.WorkCompletion, 16)
	for len(out) < n {
		k, err := cq.Poll(buf[:min(len(buf), n-len(out))])
		if err != nil {
			t.Fatalf("Poll after %d of %d completions: %v", len(out), n, err)
		}
		out = append(out, buf[:k]...)
		if k > 0 {
			continue
		}
		if err := cq.ReqNotify(); err != nil {
			t.Fatalf("ReqNotify: %v", err)
		}
		k, err = cq.Poll(buf[:min(len(buf), n-len(out))])
		if err != nil {
			t.Fatalf("Poll after %d of %d completions: %v", len(out), n, err)
		}
		out = append(out, buf[:k]...)
		if k > 0 {
			continue
		}
		select {
		case <-cq.Notify():
		case <-ctx.Done():
			t.Fatalf("timed out with %d of %d completions: %+v", len(out), n, out)
		}
	}
	return out
}

// expectNoWC asserts that cq holds no completion right now.
func expectNoWC(t *testing.T, cq verbs.CompletionQueue) {
	t.Helper()
	var wc [4]verbs.WorkCompletion
	n, err := cq.Poll(wc[:])
	if err != nil || n != 0 {
		t.Fatalf("unexpected completions: %d %+v, err %v", n, wc[:n], err)
	}
}

// expectStatus checks IDs and statuses of completions.
func expectStatus(t *testing.T, wcs []verbs.WorkCompletion, want ...wantWC) {
	t.Helper()
	if len(wcs) != len(want) {
		t.Fatalf("got %d completions %+v, want %d", len(wcs), wcs, len(want))
	}
	for i, w := range want {
		if wcs[i].ID != w.id || !w.accepts(wcs[i].Status) {
			t.Fatalf("completion %d: id %d status %v (vendor %d), want id %d status %v; all: %+v",
				i, wcs[i].ID, wcs[i].Status, wcs[i].VendorErr, w.id, w.statuses(), wcs)
		}
	}
}

// wantWC is an expected completion: its ID and the status, or one of the
// alternatives the IB specification leaves to the implementation.
type wantWC struct {
	id  uint64
	st  verbs.WCStatus
	alt []verbs.WCStatus
}

func (w wantWC) accepts(s verbs.WCStatus) bool {
	if s == w.st {
		return true
	}
	for _, a := range w.alt {
		if s == a {
			return true
		}
	}
	return false
}

func (w wantWC) statuses() []verbs.WCStatus { return append([]verbs.WCStatus{w.st}, w.alt...) }

// oneOf expects a completion of id with any of the statuses.
func oneOf(id uint64, s ...verbs.WCStatus) wantWC { return wantWC{id, s[0], s[1:]} }

func ok(id uint64) wantWC                   { return wantWC{id, verbs.WCSuccess, nil} }
func st(id uint64, s verbs.WCStatus) wantWC { return wantWC{id, s, nil} }
func flushed(id uint64) wantWC              { return wantWC{id, verbs.WCWRFlushErr, nil} }
func isErr(err, target error) bool          { return errors.Is(err, target) }
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}
func waitDone(t *testing.T, ctx context.Context, id verbs.ConnID, who string) {
	t.Helper()
	select {
	case <-id.Done():
	case <-ctx.Done():
		t.Fatalf("%s: Done not closed", who)
	}
}

// signaledWriter returns a function that posts a signaled 8-byte RDMA
// WRITE with the given ID on p's client QP (its completion lands on the
// client's send CQ).
func signaledWriter(p *pair) func(id uint64) {
	buf := p.mem.alloc(4096)
	mc, md := p.c.reg(buf[:2048], 0), p.s.reg(buf[2048:], allAccess)
	return func(id uint64) {
		p.c.postSend(verbs.SendWR{ID: id, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
			SGL: []verbs.SGE{sge(mc, 0, 8)}, RemoteAddr: md.Addr(), RKey: md.RKey()})
	}
}
