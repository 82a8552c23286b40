package auth

import (
	"crypto/hmac"
	"crypto/subtle"
	"encoding/binary"
)

// AugmentedChallenge is the challenge that replaces C when a DH group is
// used (§8.13.5.x; Linux nvme_auth_augmented_challenge):
//
//	Ca = HMAC-H(H(sessionKey), C)
//
// where sessionKey is the DH shared secret (SharedSecret) and H the
// negotiated hash. h must be a valid hash id.
func AugmentedChallenge(h HashID, sessionKey, c []byte) []byte {
	d := h.New()()
	d.Write(sessionKey)
	m := hmac.New(h.New(), d.Sum(nil))
	m.Write(c)
	return m.Sum(nil)
}

// responseInput is the common tail of both responses.
func response(h HashID, key, c []byte, seq uint32, tid uint16, role string, nqn1, nqn2 string) []byte {
	m := hmac.New(h.New(), key)
	m.Write(c)
	var b [7]byte
	binary.LittleEndian.PutUint32(b[0:], seq)
	binary.LittleEndian.PutUint16(b[4:], tid)
	b[6] = 0 // SC_C: no secure channel concatenation
	m.Write(b[:])
	m.Write([]byte(role))
	m.Write([]byte(nqn1))
	m.Write([]byte{0})
	m.Write([]byte(nqn2))
	return m.Sum(nil)
}

// HostResponse is R1 of DH-HMAC-CHAP_Reply (§8.13.5.x; Linux
// nvme_auth_dhchap_setup_host_response, nvmet_auth_host_hash):
//
//	R1 = HMAC-H(Kh, C1 || S1(4, LE) || T_ID(2, LE) || SC_C(1) = 0 ||
//	            "HostHost" || NQNh || 00h || NQNc)
//
// Kh is the host secret transformed with the host NQN (TransformKey), c1
// the challenge from the controller, or AugmentedChallenge(C1) when a DH
// group is used. h must be a valid hash id.
func HostResponse(h HashID, kh, c1 []byte, s1 uint32, tid uint16, hostNQN, subNQN string) []byte {
	return response(h, kh, c1, s1, tid, "HostHost", hostNQN, subNQN)
}

// ControllerResponse is R2 of DH-HMAC-CHAP_Success1 (Linux
// nvme_auth_dhchap_setup_ctrl_response, nvmet_auth_ctrl_hash):
//
//	R2 = HMAC-H(Kc, C2 || S2(4, LE) || T_ID(2, LE) || 00h ||
//	            "Controller" || NQNc || 00h || NQNh)
//
// Kc is the controller secret transformed with the subsystem NQN, c2 the
// host's challenge (augmented when a DH group is used).
func ControllerResponse(h HashID, kc, c2 []byte, s2 uint32, tid uint16, subNQN, hostNQN string) []byte {
	return response(h, kc, c2, s2, tid, "Controller", subNQN, hostNQN)
}

// GeneratedPSK is the PSK for a secure channel (TLS) established after
// authentication (§8.13.5.9; Linux nvme_auth_generate_psk):
// HMAC-H(sessionKey, C1 || C2). Secure channel concatenation itself is out
// of scope (it needs NVMe/TCP); this is here for its golden vector.
func GeneratedPSK(h HashID, sessionKey, c1, c2 []byte) []byte {
	m := hmac.New(h.New(), sessionKey)
	m.Write(c1)
	m.Write(c2)
	return m.Sum(nil)
}

// Equal compares two response values in constant time.
func Equal(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
