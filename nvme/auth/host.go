package auth

import (
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// ErrState: a state machine method was called out of protocol order (a
// caller bug, or a peer's message the caller should not have delivered).
var ErrState = errors.New("auth: message out of protocol order")

// HostConfig configures the host side of one authentication.
type HostConfig struct {
	HostNQN, SubNQN string
	// Secret is the host secret (--dhchap-secret). Required.
	Secret Secret
	// CtrlSecret is the controller secret (--dhchap-ctrl-secret); non-nil
	// requests bidirectional authentication.
	CtrlSecret *Secret
	// Hashes and DHGroups are offered in AUTH_Negotiate, in preference
	// order; nil offers all (as Linux does).
	Hashes   []HashID
	DHGroups []DHGroupID
	// Rand is the source of challenges, sequence numbers and DH exponents;
	// nil is crypto/rand.
	Rand io.Reader
}

type hostState uint8

const (
	hostStart hostState = iota
	hostWaitChallenge
	hostWaitSuccess1
	hostDone
	hostFailed
)

// Host drives the host side of one DH-HMAC-CHAP transaction on one queue
// (Linux nvme_queue_auth_work):
//
//	Negotiate()          -> Authentication Send (AUTH_Negotiate)
//	Challenge(recv)      -> Authentication Send (DH-HMAC-CHAP_Reply)
//	Success1(recv)       -> Authentication Send (DH-HMAC-CHAP_Success2),
//	                        only when out != nil (bidirectional)
//
// recv is the Authentication Receive data (AL bytes, zero padded). When
// Challenge or Success1 return an error with out != nil, out is the
// AUTH_Failure2 to send; with out == nil the controller sent AUTH_Failure1
// (err is a *Failure) and nothing more is sent. Either way the transaction
// is over and the queue is not authenticated. Not safe for concurrent use.
type Host struct {
	cfg     HostConfig
	rand    io.Reader
	tid     uint16
	state   hostState
	hash    HashID
	group   DHGroupID
	c2      []byte
	s2      uint32
	session []byte
}

// NewHost checks cfg and starts a transaction with transaction id tid (the
// caller gives each transaction of a controller a new one).
func NewHost(cfg HostConfig, tid uint16) (*Host, error) {
	if err := checkConfig(cfg.Secret, cfg.CtrlSecret, cfg.HostNQN, cfg.SubNQN, &cfg.Hashes, &cfg.DHGroups, "offer"); err != nil {
		return nil, err
	}
	if len(cfg.Hashes) == 0 || len(cfg.Hashes) > MaxHashIDs || len(cfg.DHGroups) == 0 || len(cfg.DHGroups) > MaxDHIDs {
		return nil, errors.New("auth: offer 1..30 hashes and 1..30 DH groups")
	}
	r := cfg.Rand
	if r == nil {
		r = crand.Reader
	}
	return &Host{cfg: cfg, rand: r, tid: tid}, nil
}

// Hash and DHGroup are the controller's choice, valid after Challenge.
func (h *Host) Hash() HashID       { return h.hash }
func (h *Host) DHGroup() DHGroupID { return h.group }

// Authenticated reports whether the transaction completed: the controller
// accepted the host (and, if bidirectional, the host the controller).
func (h *Host) Authenticated() bool { return h.state == hostDone }

// Bidirectional reports whether the host asks the controller to
// authenticate itself (a controller secret is configured).
func (h *Host) Bidirectional() bool { return h.cfg.CtrlSecret != nil }

// TID is the transaction id.
func (h *Host) TID() uint16 { return h.tid }

// SessionKey is the DH shared secret (nil for the null group).
func (h *Host) SessionKey() []byte { return h.session }

// Negotiate returns the AUTH_Negotiate to send.
func (h *Host) Negotiate() ([]byte, error) {
	if h.state != hostStart {
		return nil, ErrState
	}
	m := Negotiate{TID: h.tid, SCC: SCCNone, Protocols: []Protocol{{AuthID: AuthIDDHCHAP, Hashes: h.cfg.Hashes, DHGroups: h.cfg.DHGroups}}}
	b, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	h.state = hostWaitChallenge
	return b, nil
}

// fail ends the transaction: a *Failure from the controller sends nothing,
// a *ProtocolError is answered with AUTH_Failure2.
func (h *Host) fail(err error) ([]byte, error) {
	h.state = hostFailed
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		return nil, err
	}
	f := Failure{ID: MsgFailure2, TID: h.tid, Reason: ReasonFailed, Expl: pe.Expl}
	return f.Marshal(), err
}

// peerFailure returns the controller's AUTH_Failure1 in b, if it is one.
func peerFailure(b []byte) (*Failure, bool) {
	hd, err := ParseHeader(b)
	if err != nil || hd.Type != TypeCommon || hd.ID != MsgFailure1 {
		return nil, false
	}
	f, err := ParseFailure(b)
	if err != nil {
		return nil, false
	}
	return &f, true
}

// Challenge processes DH-HMAC-CHAP_Challenge and returns the
// DH-HMAC-CHAP_Reply (or AUTH_Failure2, see Host).
func (h *Host) Challenge(b []byte) ([]byte, error) {
	if h.state != hostWaitChallenge {
		return nil, ErrState
	}
	if f, ok := peerFailure(b); ok {
		return h.fail(f)
	}
	m, err := ParseChallenge(b)
	if err != nil {
		return h.fail(err)
	}
	if m.TID != h.tid {
		return h.fail(perr(ExplIncorrectMessage, "challenge for transaction %d, want %d", m.TID, h.tid))
	}
	if !slices.Contains(h.cfg.Hashes, m.Hash) || len(m.C) != m.Hash.Size() {
		return h.fail(perr(ExplHashUnusable, "controller chose %v with HL %d", m.Hash, len(m.C)))
	}
	if !slices.Contains(h.cfg.DHGroups, m.DHGroup) {
		return h.fail(perr(ExplDHGroupUnusable, "controller chose %v", m.DHGroup))
	}
	h.hash, h.group = m.Hash, m.DHGroup
	c1 := m.C
	var dhv []byte
	if m.DHGroup == DHNull {
		if len(m.DHV) != 0 {
			return h.fail(perr(ExplIncorrectPayload, "%d-byte DH value with the null group", len(m.DHV)))
		}
	} else {
		if len(m.DHV) == 0 {
			return h.fail(perr(ExplDHGroupUnusable, "no DH value for %v", m.DHGroup))
		}
		key, err := GenerateDHKey(h.rand, m.DHGroup)
		if err != nil {
			return h.fail(perr(ExplFailed, "%v", err))
		}
		h.session, err = key.SharedSecret(m.DHV)
		if err != nil {
			return h.fail(perr(ExplIncorrectPayload, "controller's %v value: %v", m.DHGroup, err))
		}
		dhv = key.Public
		c1 = AugmentedChallenge(m.Hash, h.session, m.C)
	}
	kh, err := h.cfg.Secret.TransformKey(h.cfg.HostNQN)
	if err != nil {
		return h.fail(perr(ExplFailed, "%v", err))
	}
	r := Reply{TID: h.tid, R: HostResponse(m.Hash, kh, c1, m.SeqNum, h.tid, h.cfg.HostNQN, h.cfg.SubNQN), DHV: dhv}
	if h.cfg.CtrlSecret != nil {
		h.c2 = make([]byte, m.Hash.Size())
		if _, err := io.ReadFull(h.rand, h.c2); err != nil {
			return h.fail(perr(ExplFailed, "random challenge: %v", err))
		}
		if h.s2, err = nonzeroSeq(h.rand); err != nil {
			return h.fail(perr(ExplFailed, "random sequence number: %v", err))
		}
		r.CValid, r.C, r.SeqNum = true, h.c2, h.s2
	}
	out, err := r.Marshal()
	if err != nil {
		return h.fail(perr(ExplFailed, "%v", err))
	}
	h.state = hostWaitSuccess1
	return out, nil
}

// Success1 processes DH-HMAC-CHAP_Success1. Unidirectional: returns nil,
// nil and the host is authenticated. Bidirectional: verifies the
// controller's response and returns the DH-HMAC-CHAP_Success2 to send
// (or AUTH_Failure2, see Host).
func (h *Host) Success1(b []byte) ([]byte, error) {
	if h.state != hostWaitSuccess1 {
		return nil, ErrState
	}
	if f, ok := peerFailure(b); ok {
		return h.fail(f)
	}
	m, err := ParseSuccess1(b)
	if err != nil {
		return h.fail(err)
	}
	if m.TID != h.tid {
		return h.fail(perr(ExplIncorrectMessage, "Success1 for transaction %d, want %d", m.TID, h.tid))
	}
	if int(m.HL) != h.hash.Size() {
		return h.fail(perr(ExplHashUnusable, "Success1 HL %d, want %d", m.HL, h.hash.Size()))
	}
	if h.cfg.CtrlSecret == nil {
		h.state = hostDone
		return nil, nil
	}
	if !m.RValid {
		return h.fail(perr(ExplFailed, "controller sent no response to the host's challenge"))
	}
	kc, err := h.cfg.CtrlSecret.TransformKey(h.cfg.SubNQN)
	if err != nil {
		return h.fail(perr(ExplFailed, "%v", err))
	}
	c2 := h.c2
	if h.group != DHNull {
		c2 = AugmentedChallenge(h.hash, h.session, h.c2)
	}
	want := ControllerResponse(h.hash, kc, c2, h.s2, h.tid, h.cfg.SubNQN, h.cfg.HostNQN)
	if !Equal(want, m.R) {
		return h.fail(perr(ExplFailed, "controller response mismatch: wrong controller secret"))
	}
	h.state = hostDone
	return MarshalSuccess2(h.tid), nil
}

// nonzeroSeq draws a sequence number; 0 means "none" on the wire.
func nonzeroSeq(r io.Reader) (uint32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return 0, err
	}
	if v := binary.LittleEndian.Uint32(b[:]); v != 0 {
		return v, nil
	}
	return 1, nil
}
