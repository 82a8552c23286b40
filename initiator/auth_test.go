package initiator

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/verbs"
)

// fakeAuthTarget answers fabrics Connect (with AUTHREQ.ATR when require)
// and Authentication Send / Receive with an auth.Controller per queue,
// the way Linux nvmet does: a protocol error still completes the Send
// successfully and is reported by the next Receive (AUTH_Failure1).
type fakeAuthTarget struct {
	t       testing.TB
	subNQN  string
	require bool
	dw0     uint32 // extra Connect response bits
	noAuth  bool   // fail Authentication Send/Receive (controller without auth)
	cfg     auth.ControllerConfig

	mu        sync.Mutex
	ctrls     map[*fakeQP]*auth.Controller
	connects  []uint16 // QIDs of the Connect commands, in order
	negotiate int      // AUTH_Negotiate messages received
	authCmds  int      // Authentication Send/Receive commands
	failure2  []*auth.Failure
	authed    []uint16 // QIDs whose transaction succeeded
	tids      map[uint16][]uint16
	done      map[*auth.Controller]bool
}

func newFakeAuthTarget(t testing.TB, require bool, secret auth.Secret, ctrlSecret *auth.Secret) *fakeAuthTarget {
	return &fakeAuthTarget{t: t, subNQN: "nqn.2026-01.io.rdmablk:auth", require: require,
		cfg:   auth.ControllerConfig{Secret: secret, CtrlSecret: ctrlSecret},
		ctrls: map[*fakeQP]*auth.Controller{}, tids: map[uint16][]uint16{}, done: map[*auth.Controller]bool{}}
}

func (ft *fakeAuthTarget) handle(q *fakeQP, cmd *fakeCmd) nvme.CQE {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var cqe nvme.CQE
	e := &cmd.sqe
	sgl := e.SGL1()
	hostMem := func(n int, need verbs.Access) []byte {
		if !sgl.IsKeyed() || int(sgl.Length()) != n {
			ft.t.Errorf("fabrics command %#x: SGL %v for %d bytes", e.FCType(), sgl, n)
			return nil
		}
		b, ok := q.mem.lookup(sgl.Address(), n, sgl.Key(), true, need)
		if !ok {
			ft.t.Errorf("fabrics command %#x: host memory not registered", e.FCType())
		}
		return b
	}
	switch e.FCType() {
	case nvme.FabricsConnect:
		qid := uint16(e.CDW10() >> 16)
		ft.connects = append(ft.connects, qid)
		b := hostMem(nvme.ConnectDataSize, verbs.AccessRemoteRead)
		d, err := nvme.ParseConnectData(b)
		if err != nil {
			ft.t.Errorf("connect data: %v", err)
		}
		cfg := ft.cfg
		cfg.HostNQN, cfg.SubNQN = d.HostNQN, d.SubNQN
		ac, err := auth.NewController(cfg)
		if err != nil {
			ft.t.Fatal(err)
		}
		ft.ctrls[q] = ac
		dw0 := uint32(1) | ft.dw0 // CNTLID 1
		if ft.require {
			dw0 |= connectATR
		}
		cqe.SetDW0(dw0)
	case nvme.FabricsAuthSend, nvme.FabricsAuthRecv:
		ft.authCmds++
		ac := ft.ctrls[q]
		ac2 := auth.AuthCmd{SQE: e}
		if _, err := ac2.Check(); err != nil || ac == nil || ft.noAuth {
			cqe.SetStatus(nvme.StatusInvalidField | nvme.StatusDNR)
			return cqe
		}
		if e.FCType() == nvme.FabricsAuthSend {
			b := hostMem(int(ac2.Length()), verbs.AccessRemoteRead)
			if h, err := auth.ParseHeader(b); err == nil && h.ID == auth.MsgNegotiate {
				ft.negotiate++
				ft.tids[q.qid] = append(ft.tids[q.qid], h.TID)
			}
			err := ac.Send(b)
			var f *auth.Failure
			if errors.As(err, &f) {
				ft.failure2 = append(ft.failure2, f)
			}
		} else {
			msg, err := ac.Receive()
			if err != nil || len(msg) > int(ac2.Length()) {
				cqe.SetStatus(nvme.StatusInvalidField | nvme.StatusDNR)
				return cqe
			}
			b := hostMem(int(ac2.Length()), verbs.AccessRemoteWrite)
			clear(b)
			copy(b, msg)
		}
		if ac.Authenticated() && !ac.Failed() && !ft.done[ac] {
			ft.done[ac] = true
			ft.authed = append(ft.authed, q.qid)
		}
	default:
		cqe.SetStatus(nvme.StatusInvalidOpcode)
	}
	return cqe
}

// authRig connects a controller on the fake verbs against ft: the admin
// queue's Connect and authentication (connectAdmin), then nq I/O queues
// (IOQueue.connect) — the code Connect runs — without a provider.
func authRig(t *testing.T, ft *fakeAuthTarget, nq int, opts Options) (*Controller, error) {
	t.Helper()
	if err := checkAuthOptions(&opts); err != nil {
		return nil, err
	}
	mem := &fakeMem{}
	c := newController("fake:4420", ft.subNQN, opts.withDefaults())
	c.pd = mem
	t.Cleanup(func() { _ = c.Close() })
	mk := func(qid uint16, depth int) *qpair {
		cq := newFakeCQ()
		fqp := &fakeQP{t: t, mem: mem, cq: cq, bs: 512, auto: true, fabrics: ft.handle, qid: qid}
		q := newFakeQpair(t, mem, fqp, cq, qid, depth, 0)
		c.conns.Lock()
		c.qpairs = append(c.qpairs, q)
		c.conns.Unlock()
		return q
	}
	admin, err := newAdminQueue(c, mk(0, AdminQueueDepth), mem, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.admin = admin
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		admin.run()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.connectAdmin(ctx, 0); err != nil {
		return nil, err
	}
	for i := 0; i < nq; i++ {
		ioq, err := newIOQueue(c, i, mk(uint16(i+1), 8), 8192, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		c.queues = append(c.queues, ioq)
		cd := nvme.ConnectData{HostID: c.opts.HostID, CNTLID: c.cntlid, SubNQN: c.subNQN, HostNQN: c.opts.HostNQN}
		if err := ioq.connect(ctx, &cd); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func testSecret(t *testing.T, hh auth.HashID, fill byte) *auth.Secret {
	t.Helper()
	s, err := auth.GenerateSecret(bytes.NewReader(bytes.Repeat([]byte{fill}, 64)), hh, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

// TestAuthUnidirectional: a controller that requires authentication gets
// one transaction per queue (admin + I/O), each with its own T_ID, before
// the next queue connects.
func TestAuthUnidirectional(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	ft := newFakeAuthTarget(t, true, *sec, nil)
	c, err := authRig(t, ft, 2, Options{DHCHAPSecret: sec})
	if err != nil {
		t.Fatal(err)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if want := []uint16{0, 1, 2}; !equalU16(ft.connects, want) || !equalU16(ft.authed, want) {
		t.Fatalf("connects %v authenticated %v, want %v for both", ft.connects, ft.authed, want)
	}
	if ft.negotiate != 3 {
		t.Fatalf("%d AUTH_Negotiate, want 3", ft.negotiate)
	}
	seen := map[uint16]bool{}
	for _, ts := range ft.tids {
		for _, tid := range ts {
			if seen[tid] {
				t.Fatalf("T_ID %d used twice: %v", tid, ft.tids)
			}
			seen[tid] = true
		}
	}
	if c.CNTLID() != 1 {
		t.Fatalf("CNTLID %d", c.CNTLID())
	}
}

// TestAuthBidirectional: with a controller secret the host verifies the
// controller (Success2 sent), with a DH group and a larger hash.
func TestAuthBidirectional(t *testing.T) {
	sec := testSecret(t, auth.HashSHA384, 2)
	csec := testSecret(t, auth.HashSHA512, 3)
	ft := newFakeAuthTarget(t, true, *sec, csec)
	ft.cfg.Hashes = []auth.HashID{auth.HashSHA384}
	ft.cfg.DHGroups = []auth.DHGroupID{auth.FFDHE2048}
	if _, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec, DHCHAPCtrlSecret: csec}); err != nil {
		t.Fatal(err)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if !equalU16(ft.authed, []uint16{0, 1}) {
		t.Fatalf("authenticated queues %v", ft.authed)
	}
	for q, ac := range ft.ctrls {
		if !ac.Authenticated() || ac.Hash() != auth.HashSHA384 || ac.DHGroup() != auth.FFDHE2048 {
			t.Fatalf("queue %d: authenticated %v with %v %v", q.qid, ac.Authenticated(), ac.Hash(), ac.DHGroup())
		}
	}
}

// TestAuthWrongSecret: the controller's AUTH_Failure1 becomes one clear
// error; no I/O queue is connected.
func TestAuthWrongSecret(t *testing.T) {
	ft := newFakeAuthTarget(t, true, *testSecret(t, auth.HashSHA256, 1), nil)
	_, err := authRig(t, ft, 2, Options{DHCHAPSecret: testSecret(t, auth.HashSHA256, 9)})
	t.Log(err)
	var ae *AuthError
	var f *auth.Failure
	if !errors.As(err, &ae) || !errors.Is(err, ErrAuthFailed) || !errors.As(err, &f) || f.Expl != auth.ExplFailed || ae.QID != 0 {
		t.Fatalf("err = %v, want an *AuthError on queue 0 wrapping AUTH_Failure1 (authentication failed)", err)
	}
	if !strings.Contains(err.Error(), `authentication failed: controller says "authentication failed" (reason 1 explanation 1)`) {
		t.Fatalf("message %q", err)
	}
	if !permanent(err) {
		t.Fatal("an authentication failure is not permanent for a Session")
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if !equalU16(ft.connects, []uint16{0}) || len(ft.authed) != 0 {
		t.Fatalf("connects %v authenticated %v, want only the admin queue, unauthenticated", ft.connects, ft.authed)
	}
}

// TestAuthMissingSecret: a controller that requires authentication and no
// secret: refused before any Authentication Send.
func TestAuthMissingSecret(t *testing.T) {
	ft := newFakeAuthTarget(t, true, *testSecret(t, auth.HashSHA256, 1), nil)
	_, err := authRig(t, ft, 1, Options{})
	t.Log(err)
	if !errors.Is(err, ErrAuthRequired) || !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("err = %v, want ErrAuthRequired", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "requires DH-HMAC-CHAP") || !strings.Contains(msg, "--dhchap-secret") {
		t.Fatalf("message %q", msg)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if ft.authCmds != 0 {
		t.Fatalf("%d authentication commands sent without a secret", ft.authCmds)
	}
}

// TestAuthWrongCtrlSecret: the host rejects a controller that does not
// know the controller secret, and tells it with AUTH_Failure2.
func TestAuthWrongCtrlSecret(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	ft := newFakeAuthTarget(t, true, *sec, testSecret(t, auth.HashSHA256, 4))
	_, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec, DHCHAPCtrlSecret: testSecret(t, auth.HashSHA256, 5)})
	t.Log(err)
	var pe *auth.ProtocolError
	if !errors.Is(err, ErrAuthFailed) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "wrong controller secret") {
		t.Fatalf("err = %v, want an authentication failure naming the controller secret", err)
	}
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.failure2) != 1 || ft.failure2[0].Expl != auth.ExplFailed {
		t.Fatalf("controller got AUTH_Failure2 %v, want one (authentication failed)", ft.failure2)
	}
}

// TestAuthNotRequired: a secret alone does not authenticate a controller
// that does not ask (as Linux); a controller secret does, and a
// controller that cannot is refused.
func TestAuthNotRequired(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	csec := testSecret(t, auth.HashSHA256, 2)
	t.Run("secret", func(t *testing.T) {
		ft := newFakeAuthTarget(t, false, *sec, nil)
		if _, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec}); err != nil {
			t.Fatal(err)
		}
		if ft.authCmds != 0 {
			t.Fatalf("%d authentication commands to a controller that requires none", ft.authCmds)
		}
	})
	t.Run("ctrl-secret", func(t *testing.T) {
		ft := newFakeAuthTarget(t, false, *sec, csec)
		if _, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec, DHCHAPCtrlSecret: csec}); err != nil {
			t.Fatal(err)
		}
		if !equalU16(ft.authed, []uint16{0, 1}) {
			t.Fatalf("authenticated %v", ft.authed)
		}
	})
	t.Run("ctrl-secret-discovery", func(t *testing.T) {
		ft := newFakeAuthTarget(t, false, *sec, csec)
		ft.subNQN = nvme.DiscoveryNQN
		ft.noAuth = true
		if _, err := authRig(t, ft, 0, Options{DHCHAPSecret: sec, DHCHAPCtrlSecret: csec}); err != nil {
			t.Fatal(err)
		}
		if ft.authCmds != 0 {
			t.Fatalf("%d authentication commands to a discovery controller that requires none", ft.authCmds)
		}
	})
	t.Run("ctrl-secret-unsupported", func(t *testing.T) {
		ft := newFakeAuthTarget(t, false, *sec, csec)
		ft.noAuth = true
		_, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec, DHCHAPCtrlSecret: csec})
		if !errors.Is(err, ErrAuthFailed) || !errors.Is(err, nvme.StatusInvalidField) || !strings.Contains(err.Error(), "bidirectional authentication was requested") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestAuthSecureConcatRefused: AUTHREQ.ASCR (TLS) is refused clearly.
func TestAuthSecureConcatRefused(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	ft := newFakeAuthTarget(t, true, *sec, nil)
	ft.dw0 = connectASCR
	_, err := authRig(t, ft, 1, Options{DHCHAPSecret: sec})
	if !errors.Is(err, ErrAuthFailed) || !strings.Contains(err.Error(), "secure channel concatenation") {
		t.Fatalf("err = %v", err)
	}
}

// TestAuthReconnect: a new association (what a Session's reconnect
// makes) authenticates every queue again.
func TestAuthReconnect(t *testing.T) {
	sec := testSecret(t, auth.HashSHA256, 1)
	ft := newFakeAuthTarget(t, true, *sec, nil)
	for round := 1; round <= 2; round++ {
		c, err := authRig(t, ft, 2, Options{DHCHAPSecret: sec})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		ft.mu.Lock()
		n, neg := len(ft.authed), ft.negotiate
		ft.mu.Unlock()
		if n != 3*round || neg != 3*round {
			t.Fatalf("round %d: %d queues authenticated after %d negotiations, want %d", round, n, neg, 3*round)
		}
	}
}

// TestAuthOptions: a controller secret needs a host secret; secrets are
// validated before any connection.
func TestAuthOptions(t *testing.T) {
	csec := testSecret(t, auth.HashSHA256, 2)
	if _, err := Connect(context.Background(), "x:1", "nqn.a", Options{Provider: noProvider{}, DHCHAPCtrlSecret: csec}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ctrl secret alone: %v", err)
	}
	bad := &auth.Secret{Key: make([]byte, 7)}
	if _, err := Discover(context.Background(), "x:1", Options{Provider: noProvider{}, DHCHAPSecret: bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad secret: %v", err)
	}
}

// noProvider fails the test if used.
type noProvider struct{ verbs.Provider }

func equalU16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
