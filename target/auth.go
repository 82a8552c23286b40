package target

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmablk/rdmablk/nvme"
	"github.com/rdmablk/rdmablk/nvme/auth"
)

// This file is NVMe in-band authentication (DH-HMAC-CHAP) on the target:
// NVMe Base 2.0 §8.13 (Base 2.2 §8.3.4.5), the Fabrics Authentication
// Send (FCTYPE 05h, §6.3) and Authentication Receive (06h, §6.2)
// commands, and the AUTHREQ field of the Connect response. The protocol
// itself is package nvme/auth; this file carries its messages and gates
// every other command on the outcome.
//
// Facts checked against Linux nvmet (drivers/nvme/target/fabrics-cmd.c,
// fabrics-cmd-auth.c, core.c) and SPDK (lib/nvmf/auth.c):
//   - Connect response DW0 bit 17 is ATR (authentication transaction
//     required), bit 18 ASCR (secure channel; never set here); both the
//     admin and every I/O queue Connect carry ATR, and every queue
//     authenticates on its own.
//   - Authentication Send/Receive are accepted on the admin queue and on
//     I/O queues. Until a queue has authenticated, every other command on
//     it completes with Authentication Required (SCT 1h, SC 91h) and DNR,
//     as nvmet_parse_admin_cmd / nvmet_parse_io_cmd answer. Unlike nvmet
//     (which lets Property Get/Set through), Property Get/Set are refused
//     too, as SPDK does: an unauthenticated host must not enable the
//     controller or start a shutdown flush. The Linux host authenticates
//     straight after each Connect, before any Property Get.
//   - SECP E9h, SPSP0 = SPSP1 = 01h, TL/AL not 0 (else Invalid Field,
//     DNR); the SGL length must equal TL/AL (else Data SGL Length Invalid).
//   - A failed transaction: the AUTH_Failure1 is delivered by the next
//     Authentication Receive, then the controller is fatal (CSTS.CFS) and
//     torn down (nvmet_ctrl_fatal_error); an AUTH_Failure2 from the host
//     ends it the same way.
//   - A new AUTH_Negotiate on an authenticated queue re-authenticates it.
//
// Beyond nvmet: an I/O queue Connect is refused with Authentication
// Required until the admin queue has authenticated; a subsystem may
// require authentication of every host (RequireAuth: a host without a
// secret is refused at Connect with Connect Invalid Host, as nvmet answers
// a failed nvmet_setup_auth); and a queue that has not authenticated
// within authTimeout of its Connect fails (SPDK's 120 s default), so an
// unauthenticated connection cannot hold a controller forever.

// HostAuth is the DH-HMAC-CHAP configuration of one host on one subsystem
// (nvmet's dhchap_key, dhchap_ctrl_key, dhchap_hash, dhchap_dhgroup).
// A host with a HostAuth must authenticate every queue it connects.
//
// Printing a HostAuth (%v) shows the secrets redacted (auth.Secret.String).
type HostAuth struct {
	// Secret is the host's secret (DHHC-1, `nvme gen-dhchap-key`): the
	// host proves it holds it. Required.
	Secret auth.Secret
	// CtrlSecret is the controller secret, for bidirectional
	// authentication (the host also authenticates the controller). nil: a
	// host asking for bidirectional authentication is refused.
	CtrlSecret *auth.Secret
	// Hashes and DHGroups the controller accepts, in preference order. nil
	// accepts all (SHA-256/384/512; null, ffdhe2048…8192), preferring
	// SHA-256 and the null group, as nvmet.
	Hashes   []auth.HashID
	DHGroups []auth.DHGroupID
}

// validate checks a HostAuth for hostNQN on subsystem subNQN.
func (a *HostAuth) validate(hostNQN, subNQN string) error {
	if _, err := auth.NewController(a.controllerConfig(hostNQN, subNQN)); err != nil {
		return fmt.Errorf("%w: DH-HMAC-CHAP of host %s: %v", ErrBadConfig, hostNQN, err)
	}
	if len(a.Hashes) == 0 && a.Hashes != nil || len(a.DHGroups) == 0 && a.DHGroups != nil {
		return fmt.Errorf("%w: DH-HMAC-CHAP of host %s: empty hash or DH group list (nil accepts all)", ErrBadConfig, hostNQN)
	}
	return nil
}

func (a *HostAuth) controllerConfig(hostNQN, subNQN string) auth.ControllerConfig {
	return auth.ControllerConfig{HostNQN: hostNQN, SubNQN: subNQN, Secret: a.Secret,
		CtrlSecret: a.CtrlSecret, Hashes: a.Hashes, DHGroups: a.DHGroups}
}

// clone returns a deep copy, so that later changes by the caller do not
// reach a running controller.
func (a HostAuth) clone() *HostAuth {
	c := a
	c.Secret.Key = append([]byte(nil), a.Secret.Key...)
	if a.CtrlSecret != nil {
		cs := *a.CtrlSecret
		cs.Key = append([]byte(nil), cs.Key...)
		c.CtrlSecret = &cs
	}
	c.Hashes = slices.Clone(a.Hashes) // nil stays nil: accept all
	c.DHGroups = slices.Clone(a.DHGroups)
	return &c
}

// Connect response DW0 AUTHREQ bits (NVMe-oF: Connect response; Linux
// NVME_CONNECT_AUTHREQ_ATR / _ASCR).
const (
	connectATR  = 1 << 17 // authentication transaction required
	connectASCR = 1 << 18 // authentication and secure channel required (unused)
)

// statusAuthRequired answers every command but Authentication
// Send/Receive on a queue that has not authenticated (nvmet and SPDK: with
// DNR).
var statusAuthRequired = nvme.StatusAuthRequired.WithDNR()

// authTimeout bounds the time from a queue's Connect to its first
// successful authentication (SPDK's default; nvmet restarts a stalled
// transaction after KATO or 120 s).
const authTimeout = 120 * time.Second

// authFailureLinger is how long after a failed authentication the
// controller's connections are closed: time for the AUTH_Failure1 (or the
// completion of the host's AUTH_Failure2) to reach the host. The
// controller is dead from the failure on: nothing else runs meanwhile.
const authFailureLinger = time.Second

// queueAuth is the DH-HMAC-CHAP state of one queue whose host must
// authenticate. Authentication Send/Receive run on the worker pool (a DH
// computation takes milliseconds), so mu serialises them; ok is read
// lock-free by the queue goroutine for every command.
type queueAuth struct {
	ok atomic.Bool // authenticated (stays true during a re-authentication)
	// busy: an Authentication Send/Receive of this queue is on the worker
	// pool; set by the queue goroutine, cleared by the worker. A host gets
	// one at a time, so it cannot tie up more than one worker.
	busy  atomic.Bool
	mu    sync.Mutex // guards ctrl, timer, over, tries
	ctrl  *auth.Controller
	timer timer            // authTimeout; nil once authenticated or stopped
	over  bool             // the transaction failed; the controller is being torn down
	tries int              // AUTH_Negotiates before the queue first authenticated
	tr    *auth.Transcript // Options.AuthTranscript: the first transaction, until it ends
}

// maxAuthTries bounds the transactions a queue may start before it has
// authenticated once: each costs the target a DH key generation, and the
// Linux host starts one per queue (retrying only after a new Connect).
const maxAuthTries = 4

// newQueueAuth prepares q for authentication with a's secrets and arms its
// timeout. Called from the queue goroutine at Connect.
func (q *Queue) newQueueAuth(c *Controller, a *HostAuth) error {
	var (
		ac  *auth.Controller
		tr  *auth.Transcript
		err error
	)
	if q.t.opts.AuthTranscript != nil {
		ac, tr, err = auth.RecordController(a.controllerConfig(c.hostNQN, c.subsys.nqn))
	} else {
		ac, err = auth.NewController(a.controllerConfig(c.hostNQN, c.subsys.nqn))
	}
	if err != nil {
		return err
	}
	qa := &queueAuth{ctrl: ac, tr: tr}
	qid := q.qid
	qa.timer = q.t.opts.clock.AfterFunc(authTimeout, func() {
		qa.mu.Lock()
		late := !qa.ok.Load() && !qa.over && qa.timer != nil
		qa.mu.Unlock()
		if late {
			c.authFailed(qa, qid, errors.New("no successful authentication within "+authTimeout.String()+" of Connect"))
		}
	})
	q.auth = qa
	return nil
}

// stopAuth stops the queue's authentication timer (Queue.Destroy).
func (q *Queue) stopAuth() {
	if qa := q.auth; qa != nil {
		qa.mu.Lock()
		if qa.timer != nil {
			qa.timer.Stop()
			qa.timer = nil
		}
		qa.mu.Unlock()
	}
}

// execAuth starts an Authentication Send or Receive on queue q of
// controller c (queue goroutine): field checks inline, the protocol step on
// the worker pool.
func (q *Queue) execAuth(r *Request, c *Controller) bool {
	if c == nil || q.auth == nil {
		// Before Connect, or a host that has no secret here: there is no
		// transaction to take part in (SPDK: Command Sequence Error).
		return q.completeInline(r, nvme.StatusCommandSequenceError.WithDNR())
	}
	cmd := auth.AuthCmd{SQE: &r.SQE}
	if _, err := cmd.Check(); err != nil {
		return q.completeInline(r, nvme.StatusInvalidField.WithDNR())
	}
	want := nvme.DirHostToCtrl
	r.core.kind = kindAuthSend
	if r.SQE.FCType() == nvme.FabricsAuthRecv {
		want, r.core.kind = nvme.DirCtrlToHost, kindAuthRecv
	}
	if r.Dir != want || r.Length != cmd.Length() || uint32(len(r.Data)) < r.Length {
		return q.completeInline(r, nvme.StatusDataSGLLengthInvalid.WithDNR())
	}
	if !q.auth.busy.CompareAndSwap(false, true) {
		// The protocol has one message in flight at a time.
		return q.completeInline(r, nvme.StatusCommandSequenceError)
	}
	r.core.ctrl = c
	return q.submit(r)
}

// runAuth performs an Authentication Send or Receive (worker goroutine).
func runAuth(r *Request) nvme.Status {
	q, c, qa := r.core.q, r.core.ctrl, r.core.q.auth
	qid := q.qid // written at Connect, before any command could be submitted
	defer qa.busy.Store(false)
	qa.mu.Lock()
	if qa.over {
		qa.mu.Unlock()
		return nvme.StatusCommandSequenceError.WithDNR()
	}
	var (
		st     = nvme.StatusSuccess
		failed error
	)
	if r.core.kind == kindAuthSend {
		msg := r.Data[:r.Length]
		if h, err := auth.ParseHeader(msg); err == nil && h.Type == auth.TypeCommon && h.ID == auth.MsgNegotiate && !qa.ok.Load() {
			if qa.tries++; qa.tries > maxAuthTries {
				qa.mu.Unlock()
				c.authFailed(qa, qid, fmt.Errorf("more than %d AUTH_Negotiate without authenticating", maxAuthTries))
				return nvme.StatusCommandSequenceError.WithDNR()
			}
		}
		err := qa.ctrl.Send(msg)
		if errors.Is(err, auth.ErrState) {
			st = nvme.StatusCommandSequenceError.WithDNR()
		}
		var f *auth.Failure
		if errors.As(err, &f) {
			// The host's AUTH_Failure2: over, nothing to deliver.
			failed = err
		}
	} else {
		msg, err := qa.ctrl.Receive()
		switch {
		case err != nil:
			st = nvme.StatusCommandSequenceError.WithDNR()
		case len(msg) > int(r.Length):
			// The host's buffer cannot take the message: it can never
			// authenticate on this transaction.
			st = nvme.StatusInvalidField.WithDNR()
			failed = fmt.Errorf("authentication receive: AL %d, the message needs %d bytes", r.Length, len(msg))
		default:
			n := copy(r.Data[:r.Length], msg)
			clear(r.Data[n:r.Length])
			if qa.ctrl.Failed() {
				// The AUTH_Failure1 is on its way.
				failed = qa.ctrl.Err()
				if failed == nil {
					failed = errors.New("authentication failed")
				}
			}
		}
	}
	ok := qa.ctrl.Authenticated()
	first := ok && !qa.ok.Load()
	if ok && qa.timer != nil {
		qa.timer.Stop()
		qa.timer = nil
	}
	qa.ok.Store(ok && failed == nil)
	if failed != nil {
		qa.over = true
	}
	tr := qa.tr
	if tr != nil && (first || failed != nil) {
		tr.Finish(qa.ctrl)
		qa.tr = nil
	} else {
		tr = nil
	}
	qa.mu.Unlock()
	if tr != nil {
		q.t.opts.AuthTranscript(tr)
	}
	switch {
	case failed != nil:
		c.authFailed(qa, qid, failed)
	case first && qid == 0:
		c.authed.Store(true)
		c.t.log.Info("nvmet: host authenticated (DH-HMAC-CHAP)", "subnqn", c.subsys.nqn, "cntlid", c.id,
			"hostnqn", c.hostNQN, "hash", qa.ctrl.Hash().String(), "dhgroup", qa.ctrl.DHGroup().String())
	}
	return st
}

// authFailed ends controller c after a failed or timed-out authentication
// on queue qid: the controller is fatal at once (CSTS.CFS; its queues run
// nothing more), its held AERs complete, and its connections are closed
// authFailureLinger later. Any goroutine.
func (c *Controller) authFailed(qa *queueAuth, qid uint16, why error) {
	qa.mu.Lock()
	qa.over = true
	qa.ok.Store(false)
	if qa.timer != nil {
		qa.timer.Stop()
		qa.timer = nil
	}
	qa.mu.Unlock()
	c.authed.Store(false)
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.csts |= nvme.CSTSCFS
	aers, conns := c.dieLocked()
	c.mu.Unlock()
	c.t.authFailures.Add(1)
	// why comes from nvme/auth and never holds key material.
	c.t.log.Warn("nvmet: DH-HMAC-CHAP authentication failed; tearing the controller down",
		"subnqn", c.subsys.nqn, "cntlid", c.id, "hostnqn", c.hostNQN, "qid", qid, "reason", why)
	c.finishDeath(aers, nil, statusRefused, "authentication failed")
	c.t.opts.clock.AfterFunc(authFailureLinger, func() {
		for _, conn := range conns {
			conn.Close()
		}
	})
}
