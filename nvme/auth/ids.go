package auth

import (
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
)

// Security protocol values of Authentication Send / Receive (NVMe Base 2.0
// §6.3 / §6.2, Figure 582): SECP E9h selects NVMe in-band authentication,
// SPSP0 = SPSP1 = 01h is the only protocol-specific field value defined for it.
const (
	SECP  = 0xE9
	SPSP0 = 0x01
	SPSP1 = 0x01
)

// AuthType is the message class in byte 0 of every authentication message
// (§8.13.5, "AUTH_Type").
type AuthType uint8

const (
	// TypeCommon: AUTH_Negotiate, AUTH_Failure1, AUTH_Failure2.
	TypeCommon AuthType = 0x00
	// TypeDHCHAP: the DH-HMAC-CHAP protocol messages.
	TypeDHCHAP AuthType = 0x01
)

// MessageID is the AUTH_Id in byte 1 of every authentication message.
type MessageID uint8

const (
	MsgNegotiate MessageID = 0x00 // AUTH_Negotiate (TypeCommon)
	MsgChallenge MessageID = 0x01 // DH-HMAC-CHAP_Challenge
	MsgReply     MessageID = 0x02 // DH-HMAC-CHAP_Reply
	MsgSuccess1  MessageID = 0x03 // DH-HMAC-CHAP_Success1
	MsgSuccess2  MessageID = 0x04 // DH-HMAC-CHAP_Success2
	MsgFailure2  MessageID = 0xF0 // AUTH_Failure2 (host to controller, TypeCommon)
	MsgFailure1  MessageID = 0xF1 // AUTH_Failure1 (controller to host, TypeCommon)
)

func (m MessageID) String() string {
	switch m {
	case MsgNegotiate:
		return "AUTH_Negotiate"
	case MsgChallenge:
		return "DH-HMAC-CHAP_Challenge"
	case MsgReply:
		return "DH-HMAC-CHAP_Reply"
	case MsgSuccess1:
		return "DH-HMAC-CHAP_Success1"
	case MsgSuccess2:
		return "DH-HMAC-CHAP_Success2"
	case MsgFailure1:
		return "AUTH_Failure1"
	case MsgFailure2:
		return "AUTH_Failure2"
	}
	return fmt.Sprintf("auth message %#02x", uint8(m))
}

// AuthIDDHCHAP is the AUTHID of the DH-HMAC-CHAP protocol descriptor in
// AUTH_Negotiate.
const AuthIDDHCHAP = 0x01

// SCC is the secure channel concatenation field of AUTH_Negotiate. Only
// SCCNone is supported here (concatenation needs NVMe/TCP with TLS).
const (
	SCCNone       = 0x00
	SCCNewTLSPSK  = 0x01
	SCCReplaceTLS = 0x02
)

// HashID identifies a hash function (§8.13.5.2, "DH-HMAC-CHAP hash function
// identifiers"). The same numbers are the <hh> of a DHHC-1 secret, where 0
// means "no transformation".
type HashID uint8

const (
	HashNone   HashID = 0x00 // only as a secret's transformation id
	HashSHA256 HashID = 0x01
	HashSHA384 HashID = 0x02
	HashSHA512 HashID = 0x03
)

// AllHashes lists the hash functions in the order a host offers them.
var AllHashes = []HashID{HashSHA256, HashSHA384, HashSHA512}

// Valid reports whether h is a usable hash function (not HashNone).
func (h HashID) Valid() bool { return h >= HashSHA256 && h <= HashSHA512 }

// Size is the digest length in bytes (0 for an unknown id).
func (h HashID) Size() int {
	switch h {
	case HashSHA256:
		return 32
	case HashSHA384:
		return 48
	case HashSHA512:
		return 64
	}
	return 0
}

// New returns a new hash.Hash, or nil for an unknown id.
func (h HashID) New() func() hash.Hash {
	switch h {
	case HashSHA256:
		return sha256.New
	case HashSHA384:
		return sha512.New384
	case HashSHA512:
		return sha512.New
	}
	return nil
}

func (h HashID) String() string {
	switch h {
	case HashNone:
		return "none"
	case HashSHA256:
		return "hmac(sha256)"
	case HashSHA384:
		return "hmac(sha384)"
	case HashSHA512:
		return "hmac(sha512)"
	}
	return fmt.Sprintf("hash %#02x", uint8(h))
}

// ParseHash accepts the names nvme-cli and nvmet configfs use
// ("hmac(sha256)", "sha256", "sha-256", "1").
func ParseHash(s string) (HashID, error) {
	switch s {
	case "hmac(sha256)", "sha256", "sha-256", "SHA-256", "1":
		return HashSHA256, nil
	case "hmac(sha384)", "sha384", "sha-384", "SHA-384", "2":
		return HashSHA384, nil
	case "hmac(sha512)", "sha512", "sha-512", "SHA-512", "3":
		return HashSHA512, nil
	}
	return 0, fmt.Errorf("auth: unknown DH-HMAC-CHAP hash %q (want hmac(sha256), hmac(sha384) or hmac(sha512))", s)
}

// DHGroupID identifies a Diffie-Hellman group (§8.13.5.2, "DH-HMAC-CHAP
// Diffie-Hellman group identifiers"); the ffdhe groups are RFC 7919's.
type DHGroupID uint8

const (
	DHNull    DHGroupID = 0x00
	FFDHE2048 DHGroupID = 0x01
	FFDHE3072 DHGroupID = 0x02
	FFDHE4096 DHGroupID = 0x03
	FFDHE6144 DHGroupID = 0x04
	FFDHE8192 DHGroupID = 0x05
)

// AllDHGroups lists the groups in the order a host offers them.
var AllDHGroups = []DHGroupID{DHNull, FFDHE2048, FFDHE3072, FFDHE4096, FFDHE6144, FFDHE8192}

// Valid reports whether g is a known group (DHNull included).
func (g DHGroupID) Valid() bool { return g <= FFDHE8192 }

func (g DHGroupID) String() string {
	switch g {
	case DHNull:
		return "null"
	case FFDHE2048:
		return "ffdhe2048"
	case FFDHE3072:
		return "ffdhe3072"
	case FFDHE4096:
		return "ffdhe4096"
	case FFDHE6144:
		return "ffdhe6144"
	case FFDHE8192:
		return "ffdhe8192"
	}
	return fmt.Sprintf("dhgroup %#02x", uint8(g))
}

// ParseDHGroup accepts the names nvmet configfs uses ("null",
// "ffdhe2048", ...) and the numeric ids.
func ParseDHGroup(s string) (DHGroupID, error) {
	for _, g := range AllDHGroups {
		if s == g.String() || s == fmt.Sprint(uint8(g)) {
			return g, nil
		}
	}
	return 0, fmt.Errorf("auth: unknown DH group %q (want null or ffdhe2048..ffdhe8192)", s)
}

// Reason codes and explanations of AUTH_Failure1/2 (§8.13.5.x, "AUTH_Failure
// reason code explanations").
const (
	// ReasonFailed is the only defined reason code: "authentication failure".
	ReasonFailed = 0x01
)

// Explanation is the reason code explanation of an AUTH_Failure message.
type Explanation uint8

const (
	ExplFailed           Explanation = 0x01 // authentication failed
	ExplNotUsable        Explanation = 0x02 // authentication protocol not usable
	ExplConcatMismatch   Explanation = 0x03 // secure channel concatenation mismatch
	ExplHashUnusable     Explanation = 0x04 // hash function not usable
	ExplDHGroupUnusable  Explanation = 0x05 // DH group not usable
	ExplIncorrectPayload Explanation = 0x06 // incorrect payload
	ExplIncorrectMessage Explanation = 0x07 // incorrect protocol message
)

func (e Explanation) String() string {
	switch e {
	case ExplFailed:
		return "authentication failed"
	case ExplNotUsable:
		return "authentication protocol not usable"
	case ExplConcatMismatch:
		return "secure channel concatenation mismatch"
	case ExplHashUnusable:
		return "hash function not usable"
	case ExplDHGroupUnusable:
		return "DH group not usable"
	case ExplIncorrectPayload:
		return "incorrect payload"
	case ExplIncorrectMessage:
		return "incorrect protocol message"
	}
	return fmt.Sprintf("failure explanation %#02x", uint8(e))
}
