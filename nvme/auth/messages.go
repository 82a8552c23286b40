package auth

import (
	"encoding/binary"
	"fmt"
)

// Wire layouts (NVMe Base 2.0 §8.13.5; Linux include/linux/nvme.h
// struct nvmf_auth_*). Every message starts with the same 6 bytes:
//
//	0 AUTH_Type | 1 AUTH_Id | 2..3 reserved | 4..5 T_ID (LE)
//
// Messages arrive in an Authentication Receive buffer of the length the
// host chose (AL), zero padded: parsers accept trailing bytes and ignore
// them. Marshal functions produce the exact message length.
const (
	HeaderSize     = 6
	NegotiateSize  = 8  // without protocol descriptors
	DescriptorSize = 64 // one AUTH_Negotiate protocol descriptor
	ChallengeSize  = 16 // without C and DHV
	ReplySize      = 16 // without R, C and DHV
	Success1Size   = 16 // without R
	Success2Size   = 16
	FailureSize    = 8

	// MaxHashIDs and MaxDHIDs: sizes of the two id lists of a descriptor.
	MaxHashIDs = 30
	MaxDHIDs   = 30
)

// ProtocolError is a parse or protocol failure carrying the AUTH_Failure
// reason code explanation the peer is to be told.
type ProtocolError struct {
	Expl Explanation
	What string
}

func (e *ProtocolError) Error() string { return "auth: " + e.What + " (" + e.Expl.String() + ")" }

func perr(x Explanation, format string, a ...any) *ProtocolError {
	return &ProtocolError{Expl: x, What: fmt.Sprintf(format, a...)}
}

// Header is the common message header.
type Header struct {
	Type AuthType
	ID   MessageID
	TID  uint16
}

// ParseHeader decodes the common header of any authentication message.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, perr(ExplIncorrectPayload, "%d-byte message shorter than its header", len(b))
	}
	return Header{Type: AuthType(b[0]), ID: MessageID(b[1]), TID: binary.LittleEndian.Uint16(b[4:])}, nil
}

func putHeader(b []byte, t AuthType, id MessageID, tid uint16) {
	b[0], b[1] = byte(t), byte(id)
	binary.LittleEndian.PutUint16(b[4:], tid)
}

func expect(b []byte, t AuthType, id MessageID, min int) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if h.Type != t || h.ID != id {
		return h, perr(ExplIncorrectMessage, "got type %#02x %v, want %v", uint8(h.Type), h.ID, id)
	}
	if len(b) < min {
		return h, perr(ExplIncorrectPayload, "%d-byte %v, need %d", len(b), id, min)
	}
	return h, nil
}

// Protocol is one AUTH_Negotiate protocol descriptor.
type Protocol struct {
	AuthID   uint8 // AuthIDDHCHAP
	Hashes   []HashID
	DHGroups []DHGroupID
}

// Negotiate is AUTH_Negotiate (host to controller, Authentication Send).
type Negotiate struct {
	TID       uint16
	SCC       uint8 // secure channel concatenation, SCCNone
	Protocols []Protocol
}

// ParseNegotiate decodes AUTH_Negotiate. Id lists longer than 30 and a
// buffer shorter than NAPD descriptors are ExplIncorrectPayload.
func ParseNegotiate(b []byte) (Negotiate, error) {
	h, err := expect(b, TypeCommon, MsgNegotiate, NegotiateSize)
	if err != nil {
		return Negotiate{}, err
	}
	m := Negotiate{TID: h.TID, SCC: b[6]}
	napd := int(b[7])
	if len(b) < NegotiateSize+napd*DescriptorSize {
		return m, perr(ExplIncorrectPayload, "%d-byte AUTH_Negotiate with %d descriptors", len(b), napd)
	}
	for i := 0; i < napd; i++ {
		d := b[NegotiateSize+i*DescriptorSize:][:DescriptorSize]
		halen, dhlen := int(d[2]), int(d[3])
		if halen > MaxHashIDs || dhlen > MaxDHIDs {
			return m, perr(ExplIncorrectPayload, "descriptor %d lists %d hashes and %d DH groups (max 30 each)", i, halen, dhlen)
		}
		p := Protocol{AuthID: d[0], Hashes: make([]HashID, halen), DHGroups: make([]DHGroupID, dhlen)}
		for j := range p.Hashes {
			p.Hashes[j] = HashID(d[4+j])
		}
		for j := range p.DHGroups {
			p.DHGroups[j] = DHGroupID(d[4+MaxHashIDs+j])
		}
		m.Protocols = append(m.Protocols, p)
	}
	return m, nil
}

// Marshal encodes AUTH_Negotiate.
func (m *Negotiate) Marshal() ([]byte, error) {
	if len(m.Protocols) > 255 {
		return nil, fmt.Errorf("auth: %d protocol descriptors (max 255)", len(m.Protocols))
	}
	b := make([]byte, NegotiateSize+len(m.Protocols)*DescriptorSize)
	putHeader(b, TypeCommon, MsgNegotiate, m.TID)
	b[6], b[7] = m.SCC, byte(len(m.Protocols))
	for i, p := range m.Protocols {
		if len(p.Hashes) > MaxHashIDs || len(p.DHGroups) > MaxDHIDs {
			return nil, fmt.Errorf("auth: descriptor %d lists %d hashes and %d DH groups (max 30 each)", i, len(p.Hashes), len(p.DHGroups))
		}
		d := b[NegotiateSize+i*DescriptorSize:]
		d[0], d[2], d[3] = p.AuthID, byte(len(p.Hashes)), byte(len(p.DHGroups))
		for j, h := range p.Hashes {
			d[4+j] = byte(h)
		}
		for j, g := range p.DHGroups {
			d[4+MaxHashIDs+j] = byte(g)
		}
	}
	return b, nil
}

// Challenge is DH-HMAC-CHAP_Challenge (controller to host, Authentication
// Receive).
type Challenge struct {
	TID     uint16
	Hash    HashID
	DHGroup DHGroupID
	SeqNum  uint32 // S1
	C       []byte // C1, HL bytes
	DHV     []byte // controller's DH public value, empty for DHNull
}

// ParseChallenge decodes DH-HMAC-CHAP_Challenge; it checks lengths only
// (which hash and group are acceptable is the host's decision).
func ParseChallenge(b []byte) (Challenge, error) {
	h, err := expect(b, TypeDHCHAP, MsgChallenge, ChallengeSize)
	if err != nil {
		return Challenge{}, err
	}
	hl, dhvlen := int(b[6]), int(binary.LittleEndian.Uint16(b[10:]))
	m := Challenge{TID: h.TID, Hash: HashID(b[8]), DHGroup: DHGroupID(b[9]), SeqNum: binary.LittleEndian.Uint32(b[12:])}
	if len(b) < ChallengeSize+hl+dhvlen {
		return m, perr(ExplIncorrectPayload, "%d-byte challenge with HL %d and DHVLEN %d", len(b), hl, dhvlen)
	}
	m.C = append([]byte(nil), b[ChallengeSize:ChallengeSize+hl]...)
	m.DHV = append([]byte(nil), b[ChallengeSize+hl:ChallengeSize+hl+dhvlen]...)
	return m, nil
}

// Marshal encodes DH-HMAC-CHAP_Challenge.
func (m *Challenge) Marshal() ([]byte, error) {
	if len(m.C) > 255 || len(m.DHV) > 0xFFFF {
		return nil, fmt.Errorf("auth: challenge of %d bytes or DH value of %d bytes too long", len(m.C), len(m.DHV))
	}
	b := make([]byte, ChallengeSize+len(m.C)+len(m.DHV))
	putHeader(b, TypeDHCHAP, MsgChallenge, m.TID)
	b[6], b[8], b[9] = byte(len(m.C)), byte(m.Hash), byte(m.DHGroup)
	binary.LittleEndian.PutUint16(b[10:], uint16(len(m.DHV)))
	binary.LittleEndian.PutUint32(b[12:], m.SeqNum)
	copy(b[ChallengeSize:], m.C)
	copy(b[ChallengeSize+len(m.C):], m.DHV)
	return b, nil
}

// Reply is DH-HMAC-CHAP_Reply (host to controller, Authentication Send).
type Reply struct {
	TID    uint16
	R      []byte // R1, HL bytes
	CValid bool   // C carries a challenge for bidirectional authentication
	C      []byte // C2, HL bytes (zero when !CValid)
	SeqNum uint32 // S2, 0 when not bidirectional
	DHV    []byte // host's DH public value, empty for DHNull
}

// ParseReply decodes DH-HMAC-CHAP_Reply.
func ParseReply(b []byte) (Reply, error) {
	h, err := expect(b, TypeDHCHAP, MsgReply, ReplySize)
	if err != nil {
		return Reply{}, err
	}
	hl, dhvlen := int(b[6]), int(binary.LittleEndian.Uint16(b[10:]))
	m := Reply{TID: h.TID, CValid: b[8]&1 != 0, SeqNum: binary.LittleEndian.Uint32(b[12:])}
	if len(b) < ReplySize+2*hl+dhvlen {
		return m, perr(ExplIncorrectPayload, "%d-byte reply with HL %d and DHVLEN %d", len(b), hl, dhvlen)
	}
	m.R = append([]byte(nil), b[ReplySize:ReplySize+hl]...)
	m.C = append([]byte(nil), b[ReplySize+hl:ReplySize+2*hl]...)
	m.DHV = append([]byte(nil), b[ReplySize+2*hl:ReplySize+2*hl+dhvlen]...)
	return m, nil
}

// Marshal encodes DH-HMAC-CHAP_Reply. C may be nil (zeroes are sent) when
// !CValid; otherwise it must be as long as R.
func (m *Reply) Marshal() ([]byte, error) {
	hl := len(m.R)
	if hl > 255 || len(m.DHV) > 0xFFFF || (len(m.C) != 0 && len(m.C) != hl) || (m.CValid && len(m.C) != hl) {
		return nil, fmt.Errorf("auth: reply with R %d, C %d, DH value %d bytes", hl, len(m.C), len(m.DHV))
	}
	b := make([]byte, ReplySize+2*hl+len(m.DHV))
	putHeader(b, TypeDHCHAP, MsgReply, m.TID)
	b[6] = byte(hl)
	if m.CValid {
		b[8] = 1
	}
	binary.LittleEndian.PutUint16(b[10:], uint16(len(m.DHV)))
	binary.LittleEndian.PutUint32(b[12:], m.SeqNum)
	copy(b[ReplySize:], m.R)
	copy(b[ReplySize+hl:], m.C)
	copy(b[ReplySize+2*hl:], m.DHV)
	return b, nil
}

// Success1 is DH-HMAC-CHAP_Success1 (controller to host, Authentication
// Receive).
type Success1 struct {
	TID    uint16
	HL     uint8
	RValid bool
	R      []byte // R2, HL bytes when RValid
}

// ParseSuccess1 decodes DH-HMAC-CHAP_Success1. R is read only when RValid.
func ParseSuccess1(b []byte) (Success1, error) {
	h, err := expect(b, TypeDHCHAP, MsgSuccess1, Success1Size)
	if err != nil {
		return Success1{}, err
	}
	m := Success1{TID: h.TID, HL: b[6], RValid: b[8]&1 != 0}
	if m.RValid {
		if len(b) < Success1Size+int(m.HL) {
			return m, perr(ExplIncorrectPayload, "%d-byte Success1 with HL %d", len(b), m.HL)
		}
		m.R = append([]byte(nil), b[Success1Size:Success1Size+int(m.HL)]...)
	}
	return m, nil
}

// Marshal encodes DH-HMAC-CHAP_Success1 with its HL-byte response field
// (zero when !RValid).
func (m *Success1) Marshal() ([]byte, error) {
	if m.RValid && len(m.R) != int(m.HL) {
		return nil, fmt.Errorf("auth: Success1 with HL %d and a %d-byte response", m.HL, len(m.R))
	}
	b := make([]byte, Success1Size+int(m.HL))
	putHeader(b, TypeDHCHAP, MsgSuccess1, m.TID)
	b[6] = m.HL
	if m.RValid {
		b[8] = 1
		copy(b[Success1Size:], m.R)
	}
	return b, nil
}

// ParseSuccess2 decodes DH-HMAC-CHAP_Success2 and returns its T_ID.
func ParseSuccess2(b []byte) (uint16, error) {
	h, err := expect(b, TypeDHCHAP, MsgSuccess2, Success2Size)
	return h.TID, err
}

// MarshalSuccess2 encodes DH-HMAC-CHAP_Success2.
func MarshalSuccess2(tid uint16) []byte {
	b := make([]byte, Success2Size)
	putHeader(b, TypeDHCHAP, MsgSuccess2, tid)
	return b
}

// Failure is AUTH_Failure1 (controller to host) or AUTH_Failure2 (host to
// controller).
type Failure struct {
	ID     MessageID // MsgFailure1 or MsgFailure2
	TID    uint16
	Reason uint8 // ReasonFailed
	Expl   Explanation
}

func (f *Failure) Error() string {
	return fmt.Sprintf("auth: %v: %v (reason %#02x)", f.ID, f.Expl, f.Reason)
}

// ParseFailure decodes AUTH_Failure1 or AUTH_Failure2. Linux before 6.x
// sent AUTH_Failure2 with AUTH_Type 01h; both types are accepted.
func ParseFailure(b []byte) (Failure, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Failure{}, err
	}
	if (h.Type != TypeCommon && h.Type != TypeDHCHAP) || (h.ID != MsgFailure1 && h.ID != MsgFailure2) {
		return Failure{}, perr(ExplIncorrectMessage, "got type %#02x %v, want AUTH_Failure", uint8(h.Type), h.ID)
	}
	if len(b) < FailureSize {
		return Failure{}, perr(ExplIncorrectPayload, "%d-byte %v", len(b), h.ID)
	}
	return Failure{ID: h.ID, TID: h.TID, Reason: b[6], Expl: Explanation(b[7])}, nil
}

// Marshal encodes the failure message (TypeCommon).
func (f *Failure) Marshal() []byte {
	b := make([]byte, FailureSize)
	putHeader(b, TypeCommon, f.ID, f.TID)
	b[6], b[7] = f.Reason, byte(f.Expl)
	return b
}
