package auth

import (
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
)

// ControllerConfig configures the controller side for one host on one
// subsystem.
type ControllerConfig struct {
	HostNQN, SubNQN string
	// Secret is the host's secret (the one the host proves it has). Required.
	Secret Secret
	// CtrlSecret is the controller secret; nil means a host asking for
	// bidirectional authentication is refused (ExplFailed), as Linux does.
	CtrlSecret *Secret
	// Hashes and DHGroups are acceptable, in the controller's preference
	// order; the first one the host also offers is chosen. nil accepts all,
	// preferring SHA-256 and the null group (Linux nvmet's defaults).
	Hashes   []HashID
	DHGroups []DHGroupID
	// Rand is the source of challenges, sequence numbers and DH exponents;
	// nil is crypto/rand.
	Rand io.Reader
}

type ctrlStep uint8

const (
	ctrlWaitNegotiate ctrlStep = iota // Send: AUTH_Negotiate
	ctrlSendChallenge                 // Receive: DH-HMAC-CHAP_Challenge
	ctrlWaitReply                     // Send: DH-HMAC-CHAP_Reply
	ctrlSendSuccess1                  // Receive: DH-HMAC-CHAP_Success1
	ctrlWaitSuccess2                  // Send: DH-HMAC-CHAP_Success2
	ctrlDone                          // authenticated; a new AUTH_Negotiate re-authenticates
	ctrlSendFailure1                  // Receive: AUTH_Failure1, then ctrlFailed
	ctrlFailed                        // over; tear the connection down
)

// Controller drives the controller side of DH-HMAC-CHAP on one queue
// (Linux nvmet_execute_auth_send / nvmet_execute_auth_receive). The
// transport hands it the data of every Authentication Send (Send) and asks
// it for the data of every Authentication Receive (Receive):
//
//	Send(AUTH_Negotiate) · Receive() challenge · Send(Reply) ·
//	Receive() Success1 · [Send(Success2) when bidirectional]
//
// A protocol error in Send is returned (for the log) and queued: the next
// Receive returns the AUTH_Failure1, after which Failed is true and the
// caller tears the connection down. The Authentication Send command itself
// still completes successfully, as in Linux. An AUTH_Failure2 from the
// host ends the transaction (Failed, Send returns the *Failure).
//
// A new AUTH_Negotiate restarts the transaction in any state
// (re-authentication); its T_ID must differ from the previous
// transaction's. Authenticated stays true during a re-authentication and
// becomes false if it fails. Not safe for concurrent use.
type Controller struct {
	cfg    ControllerConfig
	rand   io.Reader
	step   ctrlStep
	authed bool
	failed error // why the controller failed, for the log

	tid     uint16
	prevTID int32 // T_ID of the previous transaction, -1 for none
	hash    HashID
	group   DHGroupID
	expl    Explanation // queued for AUTH_Failure1
	c1      []byte
	s1      uint32
	dh      *DHKey
	session []byte
	c2      []byte
	s2      uint32

	rec *Transcript // RecordController only
}

// defaultRand is the random source of a config without Rand.
var defaultRand = crand.Reader

// NewController checks cfg.
func NewController(cfg ControllerConfig) (*Controller, error) {
	if err := checkConfig(cfg.Secret, cfg.CtrlSecret, cfg.HostNQN, cfg.SubNQN, &cfg.Hashes, &cfg.DHGroups, "accept"); err != nil {
		return nil, err
	}
	r := cfg.Rand
	if r == nil {
		r = defaultRand
	}
	return &Controller{cfg: cfg, rand: r, prevTID: -1}, nil
}

// Authenticated reports whether the host has been authenticated (the
// queue may carry commands other than Authentication Send/Receive).
func (c *Controller) Authenticated() bool { return c.authed }

// Failed reports whether the transaction failed; the caller disconnects
// once the host has read the AUTH_Failure1 (or at once, if Receive has
// already returned it or the host sent AUTH_Failure2).
func (c *Controller) Failed() bool { return c.step == ctrlSendFailure1 || c.step == ctrlFailed }

// Err is why the transaction failed, nil if it did not.
func (c *Controller) Err() error { return c.failed }

// Hash and DHGroup are the negotiated parameters.
func (c *Controller) Hash() HashID       { return c.hash }
func (c *Controller) DHGroup() DHGroupID { return c.group }

// SessionKey is the DH shared secret of the last transaction (nil for the
// null group).
func (c *Controller) SessionKey() []byte { return c.session }

func (c *Controller) fail(err error) error {
	var pe *ProtocolError
	c.expl = ExplFailed
	if errors.As(err, &pe) {
		c.expl = pe.Expl
	}
	c.step, c.authed, c.failed = ctrlSendFailure1, false, err
	return err
}

// Send consumes the data of an Authentication Send.
func (c *Controller) Send(b []byte) error {
	if c.rec != nil {
		c.rec.record(FromHost, b)
	}
	return c.send(b)
}

func (c *Controller) send(b []byte) error {
	if c.step == ctrlFailed || c.step == ctrlSendFailure1 {
		return ErrState
	}
	h, err := ParseHeader(b)
	if err != nil {
		return c.fail(err)
	}
	switch {
	case h.Type == TypeCommon && h.ID == MsgNegotiate:
		return c.negotiate(b)
	case (h.Type == TypeCommon || h.Type == TypeDHCHAP) && h.ID == MsgFailure2:
		f, err := ParseFailure(b)
		if err != nil {
			return c.fail(err)
		}
		c.step, c.authed, c.failed = ctrlFailed, false, &f
		return &f
	case h.Type != TypeDHCHAP:
		return c.fail(perr(ExplIncorrectMessage, "unexpected %v of type %#02x", h.ID, uint8(h.Type)))
	}
	want := MessageID(0xFF)
	switch c.step {
	case ctrlWaitReply:
		want = MsgReply
	case ctrlWaitSuccess2:
		want = MsgSuccess2
	}
	if h.ID != want {
		return c.fail(perr(ExplIncorrectMessage, "unexpected %v", h.ID))
	}
	if h.TID != c.tid {
		return c.fail(perr(ExplIncorrectPayload, "%v for transaction %d, want %d", h.ID, h.TID, c.tid))
	}
	if h.ID == MsgSuccess2 {
		if _, err := ParseSuccess2(b); err != nil {
			return c.fail(err)
		}
		c.step, c.authed = ctrlDone, true
		return nil
	}
	return c.reply(b)
}

func (c *Controller) negotiate(b []byte) error {
	m, err := ParseNegotiate(b)
	if err != nil {
		return c.fail(err)
	}
	c.tid = m.TID
	if c.prevTID >= 0 && int32(m.TID) == c.prevTID {
		return c.fail(perr(ExplIncorrectPayload, "transaction id %d reused", m.TID))
	}
	if m.SCC != SCCNone {
		return c.fail(perr(ExplConcatMismatch, "secure channel concatenation %d requested; not supported", m.SCC))
	}
	if len(m.Protocols) == 0 {
		return c.fail(perr(ExplIncorrectPayload, "AUTH_Negotiate without protocol descriptors"))
	}
	i := slices.IndexFunc(m.Protocols, func(p Protocol) bool { return p.AuthID == AuthIDDHCHAP })
	if i < 0 {
		return c.fail(perr(ExplNotUsable, "host offers no DH-HMAC-CHAP descriptor"))
	}
	p := m.Protocols[i]
	hi := slices.IndexFunc(c.cfg.Hashes, func(h HashID) bool { return slices.Contains(p.Hashes, h) })
	if hi < 0 {
		return c.fail(perr(ExplHashUnusable, "host offers hashes %v, subsystem accepts %v", p.Hashes, c.cfg.Hashes))
	}
	gi := slices.IndexFunc(c.cfg.DHGroups, func(g DHGroupID) bool { return slices.Contains(p.DHGroups, g) })
	if gi < 0 {
		return c.fail(perr(ExplDHGroupUnusable, "host offers DH groups %v, subsystem accepts %v", p.DHGroups, c.cfg.DHGroups))
	}
	c.prevTID = int32(m.TID)
	c.hash, c.group = c.cfg.Hashes[hi], c.cfg.DHGroups[gi]
	c.c1, c.dh, c.session, c.c2, c.s2 = nil, nil, nil, nil, 0
	c.step = ctrlSendChallenge
	return nil
}

func (c *Controller) reply(b []byte) error {
	m, err := ParseReply(b)
	if err != nil {
		return c.fail(err)
	}
	hl := c.hash.Size()
	if len(m.R) != hl {
		return c.fail(perr(ExplIncorrectPayload, "reply HL %d, want %d", len(m.R), hl))
	}
	c1 := c.c1
	if c.group == DHNull {
		if len(m.DHV) != 0 {
			return c.fail(perr(ExplIncorrectPayload, "%d-byte DH value with the null group", len(m.DHV)))
		}
	} else {
		if len(m.DHV) == 0 {
			return c.fail(perr(ExplIncorrectPayload, "no DH value for %v", c.group))
		}
		c.session, err = c.dh.SharedSecret(m.DHV)
		if err != nil {
			return c.fail(perr(ExplDHGroupUnusable, "host's %v value: %v", c.group, err))
		}
		c1 = AugmentedChallenge(c.hash, c.session, c.c1)
	}
	kh, err := c.cfg.Secret.TransformKey(c.cfg.HostNQN)
	if err != nil {
		return c.fail(perr(ExplFailed, "%v", err))
	}
	if !Equal(m.R, HostResponse(c.hash, kh, c1, c.s1, c.tid, c.cfg.HostNQN, c.cfg.SubNQN)) {
		return c.fail(perr(ExplFailed, "host response mismatch: wrong or missing host secret"))
	}
	if m.CValid && m.SeqNum != 0 {
		if c.cfg.CtrlSecret == nil {
			return c.fail(perr(ExplFailed, "host requests bidirectional authentication; no controller secret configured"))
		}
		c.c2, c.s2 = m.C, m.SeqNum
	} else {
		// Unidirectional: the host is authenticated once its response checks.
		c.authed = true
	}
	c.step = ctrlSendSuccess1
	return nil
}

// Receive returns the data of an Authentication Receive: the challenge,
// Success1 or a queued AUTH_Failure1. Called out of order it returns an
// AUTH_Failure1 (ExplFailed) and fails the transaction, as Linux does.
// The caller checks that the message fits the command's AL (else the
// command fails with Invalid Field) and zero pads the rest.
func (c *Controller) Receive() ([]byte, error) {
	out, err := c.receive()
	if err == nil && c.rec != nil {
		c.rec.record(FromCtrl, out)
	}
	return out, err
}

func (c *Controller) receive() ([]byte, error) {
	switch c.step {
	case ctrlSendChallenge:
		out, err := c.challenge()
		if err != nil {
			c.fail(perr(ExplFailed, "%v", err))
			return c.receive()
		}
		c.step = ctrlWaitReply
		return out, nil
	case ctrlSendSuccess1:
		m := Success1{TID: c.tid, HL: uint8(c.hash.Size())}
		if c.c2 != nil {
			kc, err := c.cfg.CtrlSecret.TransformKey(c.cfg.SubNQN)
			if err != nil {
				c.fail(perr(ExplFailed, "%v", err))
				return c.receive()
			}
			c2 := c.c2
			if c.group != DHNull {
				c2 = AugmentedChallenge(c.hash, c.session, c.c2)
			}
			m.RValid, m.R = true, ControllerResponse(c.hash, kc, c2, c.s2, c.tid, c.cfg.SubNQN, c.cfg.HostNQN)
			c.step = ctrlWaitSuccess2
		} else {
			c.step = ctrlDone
		}
		return m.Marshal()
	case ctrlSendFailure1:
		f := Failure{ID: MsgFailure1, TID: c.tid, Reason: ReasonFailed, Expl: c.expl}
		c.step = ctrlFailed
		return f.Marshal(), nil
	case ctrlFailed:
		return nil, ErrState
	}
	c.fail(perr(ExplFailed, "Authentication Receive out of order"))
	return c.receive()
}

func (c *Controller) challenge() ([]byte, error) {
	c.c1 = make([]byte, c.hash.Size())
	if _, err := io.ReadFull(c.rand, c.c1); err != nil {
		return nil, fmt.Errorf("random challenge: %w", err)
	}
	// S1: random for the first transaction, then incremented (skipping 0),
	// as Linux does.
	var err error
	if c.s1 == 0 {
		if c.s1, err = nonzeroSeq(c.rand); err != nil {
			return nil, fmt.Errorf("random sequence number: %w", err)
		}
	} else if c.s1++; c.s1 == 0 {
		c.s1 = 1
	}
	m := Challenge{TID: c.tid, Hash: c.hash, DHGroup: c.group, SeqNum: c.s1, C: c.c1}
	if c.group != DHNull {
		if c.dh, err = GenerateDHKey(c.rand, c.group); err != nil {
			return nil, err
		}
		m.DHV = c.dh.Public
	}
	return m.Marshal()
}

// checkConfig checks what host and controller configurations share: the
// secrets, both NQNs and the hash and DH group lists (nil: all of them,
// filled in). verb says what the side does with the lists ("offer",
// "accept") in the error.
func checkConfig(secret Secret, ctrl *Secret, hostNQN, subNQN string, hashes *[]HashID, groups *[]DHGroupID, verb string) error {
	if err := secret.Validate(); err != nil {
		return fmt.Errorf("host secret: %w", err)
	}
	if ctrl != nil {
		if err := ctrl.Validate(); err != nil {
			return fmt.Errorf("controller secret: %w", err)
		}
	}
	if hostNQN == "" || subNQN == "" {
		return errors.New("auth: host and subsystem NQN required")
	}
	if *hashes == nil {
		*hashes = AllHashes
	}
	if *groups == nil {
		*groups = AllDHGroups
	}
	for _, h := range *hashes {
		if !h.Valid() {
			return fmt.Errorf("auth: cannot %s %v", verb, h)
		}
	}
	for _, g := range *groups {
		if !g.Valid() {
			return fmt.Errorf("auth: cannot %s %v", verb, g)
		}
	}
	return nil
}
