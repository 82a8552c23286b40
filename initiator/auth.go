package initiator

import (
	"context"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
)

// In-band authentication (DH-HMAC-CHAP, NVMe Base 2.0 §8.13.5) of one
// queue, run right after its fabrics Connect and before any other command
// on it, the way the Linux host does (drivers/nvme/host/fabrics.c and
// auth.c): the admin queue and then every I/O queue, each its own
// transaction with its own transaction ID. It is connect-time only; the
// I/O path never sees it.

// AUTHREQ bits of the fabrics Connect response's DW0 (bits 15:0 are the
// CNTLID; Linux NVME_CONNECT_AUTHREQ_*).
const (
	// connectATR: Authentication Transaction Required.
	connectATR = 1 << 17
	// connectASCR: Authentication (and Secure Channel Concatenation)
	// Required — TLS on NVMe/TCP; not something this host can do.
	connectASCR = 1 << 18
)

// authRecvLen is the AL of every Authentication Receive: the Linux host's
// buffer size (CHAP_BUF_SIZE), more than the largest message (a challenge
// with an ffdhe8192 value: 1,104 bytes).
const authRecvLen = 4096

// Errors of in-band authentication; an *AuthError carries the details.
var (
	// ErrAuthFailed matches every *AuthError: the queue was not
	// authenticated, and the controller was not connected.
	ErrAuthFailed = errors.New("initiator: authentication failed")
	// ErrAuthRequired: the controller requires DH-HMAC-CHAP and
	// Options.DHCHAPSecret is nil.
	ErrAuthRequired = errors.New("initiator: controller requires DH-HMAC-CHAP authentication and no host secret (--dhchap-secret) was given")
)

// AuthError is a failed DH-HMAC-CHAP authentication of one queue. Err is
// the cause: ErrAuthRequired, an *auth.Failure (the controller's
// AUTH_Failure1: it rejected the host, typically a wrong secret), an
// *auth.ProtocolError (the host rejected the controller: a wrong
// controller secret, a malformed message), or a *StatusError (an
// Authentication Send/Receive the controller failed). errors.Is(err,
// ErrAuthFailed) matches any of them. Waiting does not change the answer:
// a Session treats it as permanent.
type AuthError struct {
	Addr    string
	SubNQN  string
	HostNQN string
	QID     uint16
	Err     error
}

func (e *AuthError) Error() string {
	where := fmt.Sprintf("initiator: %s at %s: queue %d", e.SubNQN, e.Addr, e.QID)
	if errors.Is(e.Err, ErrAuthRequired) {
		return fmt.Sprintf("initiator: %s at %s requires DH-HMAC-CHAP authentication and no host secret (--dhchap-secret) was given", e.SubNQN, e.Addr)
	}
	var f *auth.Failure
	if errors.As(e.Err, &f) {
		msg := fmt.Sprintf("%s: authentication failed: controller says %q (reason %d explanation %d)",
			where, f.Expl.String(), f.Reason, uint8(f.Expl))
		if f.Expl == auth.ExplFailed {
			msg += fmt.Sprintf("; check the host secret (--dhchap-secret) the target has for host NQN %q", e.HostNQN)
		}
		return msg
	}
	return fmt.Sprintf("%s: authentication failed: %v", where, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAuthFailed) true for every AuthError.
func (e *AuthError) Is(target error) bool { return target == ErrAuthFailed }

// authQueue carries the Authentication Send / Receive commands of one
// queue. Both block until the command completed; the error is a transport
// failure (or ctx's), an NVMe status is returned as such.
type authQueue interface {
	// authSend sends msg as the data of an Authentication Send (TL
	// len(msg)).
	authSend(ctx context.Context, msg []byte) (nvme.Status, error)
	// authReceive issues an Authentication Receive with AL al and returns
	// the al bytes received.
	authReceive(ctx context.Context, al int) ([]byte, nvme.Status, error)
}

// checkAuthOptions validates the secrets of Options (Connect, Discover).
func checkAuthOptions(o *Options) error {
	if o.DHCHAPCtrlSecret != nil && o.DHCHAPSecret == nil {
		return fmt.Errorf("%w: a controller secret (--dhchap-ctrl-secret) needs a host secret (--dhchap-secret)", ErrInvalid)
	}
	if o.DHCHAPSecret != nil {
		if err := o.DHCHAPSecret.Validate(); err != nil {
			return fmt.Errorf("%w: host secret: %w", ErrInvalid, err)
		}
	}
	if o.DHCHAPCtrlSecret != nil {
		if err := o.DHCHAPCtrlSecret.Validate(); err != nil {
			return fmt.Errorf("%w: controller secret: %w", ErrInvalid, err)
		}
	}
	return nil
}

// authenticate runs DH-HMAC-CHAP on queue qid if its Connect response
// (dw0) requires it, or if bidirectional authentication is configured.
// It is called by the goroutine connecting the queue, before the queue
// carries any other command. On an authentication failure it returns an
// *AuthError; the caller tears the controller down (so does the target).
func (c *Controller) authenticate(ctx context.Context, qid uint16, q authQueue, dw0 uint32) error {
	o := &c.opts
	fail := func(err error) error {
		return &AuthError{Addr: c.addr, SubNQN: c.subNQN, HostNQN: o.HostNQN, QID: qid, Err: err}
	}
	if dw0&connectASCR != 0 {
		return fail(errors.New("controller requires secure channel concatenation (AUTHREQ.ASCR: TLS), which this host does not support"))
	}
	required := dw0&connectATR != 0
	// A controller secret makes the host authenticate the controller even
	// when it does not ask — except a discovery controller: the secrets
	// are the subsystem's, and a discovery controller that does not
	// require authentication need not know them.
	if !required && (o.DHCHAPCtrlSecret == nil || c.subNQN == nvme.DiscoveryNQN) {
		return nil
	}
	if o.DHCHAPSecret == nil {
		return fail(ErrAuthRequired)
	}
	tid := uint16(c.authTID.Add(1))
	h, err := auth.NewHost(auth.HostConfig{
		HostNQN: o.HostNQN, SubNQN: c.subNQN,
		Secret: *o.DHCHAPSecret, CtrlSecret: o.DHCHAPCtrlSecret,
	}, tid)
	if err != nil {
		return fail(err)
	}
	send := func(what string, msg []byte) error {
		st, err := q.authSend(ctx, msg)
		if err != nil {
			return err
		}
		if !st.OK() {
			if !required && what == "AUTH_Negotiate" {
				return fail(fmt.Errorf("bidirectional authentication was requested (--dhchap-ctrl-secret) but the controller, which does not require authentication, refused it: %w",
					&StatusError{Op: "authentication send (" + what + ")", Status: st}))
			}
			return fail(&StatusError{Op: "authentication send (" + what + ")", Status: st})
		}
		return nil
	}
	recv := func(what string) ([]byte, error) {
		b, st, err := q.authReceive(ctx, authRecvLen)
		if err != nil {
			return nil, err
		}
		if !st.OK() {
			return nil, fail(&StatusError{Op: "authentication receive (" + what + ")", Status: st})
		}
		return b, nil
	}
	// step ends the transaction after a state machine error: an
	// AUTH_Failure2 to send (best effort: the controller may already
	// have given up) when out is non-nil.
	step := func(out []byte, err error) error {
		if out != nil {
			if _, serr := q.authSend(ctx, out); serr != nil {
				c.log.Debug("send AUTH_Failure2", "qid", qid, "err", serr)
			}
		}
		return fail(err)
	}

	neg, err := h.Negotiate()
	if err != nil {
		return fail(err)
	}
	if err := send("AUTH_Negotiate", neg); err != nil {
		return err
	}
	b, err := recv("DH-HMAC-CHAP_Challenge")
	if err != nil {
		return err
	}
	reply, err := h.Challenge(b)
	if err != nil {
		return step(reply, err)
	}
	if err := send("DH-HMAC-CHAP_Reply", reply); err != nil {
		return err
	}
	if b, err = recv("DH-HMAC-CHAP_Success1"); err != nil {
		return err
	}
	s2, err := h.Success1(b)
	if err != nil {
		return step(s2, err)
	}
	if s2 != nil {
		if err := send("DH-HMAC-CHAP_Success2", s2); err != nil {
			return err
		}
	}
	if !h.Authenticated() {
		return fail(errors.New("transaction did not complete"))
	}
	c.log.Info("queue authenticated", "qid", qid, "hash", h.Hash().String(), "dhgroup", h.DHGroup().String(),
		"bidirectional", h.Bidirectional())
	return nil
}

// adminAuth carries authentication on the admin queue.
type adminAuth struct{ a *adminQueue }

func (x adminAuth) authSend(ctx context.Context, msg []byte) (nvme.Status, error) {
	if len(msg) > adminBufSize {
		return 0, fmt.Errorf("%w: %d-byte authentication message", ErrInvalid, len(msg))
	}
	b, err := x.a.getBuf(ctx)
	if err != nil {
		return 0, err
	}
	defer x.a.putBuf(b)
	copy(b.b, msg)
	cqe, err := x.a.exec(ctx, func(e *nvme.SQE) { auth.SetAuthSend(e, uint32(len(msg))) }, b, len(msg), hostToCtrl)
	if err != nil {
		return 0, err
	}
	return cqe.Status(), nil
}

func (x adminAuth) authReceive(ctx context.Context, al int) ([]byte, nvme.Status, error) {
	b, err := x.a.getBuf(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer x.a.putBuf(b)
	clear(b.b[:al])
	cqe, err := x.a.exec(ctx, func(e *nvme.SQE) { auth.SetAuthReceive(e, uint32(al)) }, b, al, ctrlToHost)
	if err != nil {
		return nil, 0, err
	}
	return append([]byte(nil), b.b[:al]...), cqe.Status(), nil
}

// ioqAuth carries authentication on an I/O queue during its connect,
// before the queue is handed to its submission goroutine.
type ioqAuth struct{ q *IOQueue }

func (x ioqAuth) authSend(ctx context.Context, msg []byte) (nvme.Status, error) {
	b, ok := x.q.pool.alloc()
	if !ok {
		return 0, fmt.Errorf("%w: queue %d: no buffer for authentication", ErrInvalid, x.q.q.qid)
	}
	defer x.q.pool.release(b)
	if len(msg) > len(b.b) {
		return 0, fmt.Errorf("%w: %d-byte authentication message", ErrInvalid, len(msg))
	}
	copy(b.b, msg)
	cqe, err := x.q.execSync(ctx, "authentication send", func(e *nvme.SQE) { auth.SetAuthSend(e, uint32(len(msg))) }, b, len(msg))
	if err != nil {
		return 0, err
	}
	return cqe.Status(), nil
}

func (x ioqAuth) authReceive(ctx context.Context, al int) ([]byte, nvme.Status, error) {
	b, ok := x.q.pool.alloc()
	if !ok {
		return nil, 0, fmt.Errorf("%w: queue %d: no buffer for authentication", ErrInvalid, x.q.q.qid)
	}
	defer x.q.pool.release(b)
	al = min(al, len(b.b))
	clear(b.b[:al])
	cqe, err := x.q.execSync(ctx, "authentication receive", func(e *nvme.SQE) { auth.SetAuthReceive(e, uint32(al)) }, b, al)
	if err != nil {
		return nil, 0, err
	}
	return append([]byte(nil), b.b[:al]...), cqe.Status(), nil
}
