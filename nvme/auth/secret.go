package auth

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// Secret is a DH-HMAC-CHAP secret in the DHHC-1 representation
// (NVMe Base 2.0 §8.13.5.8, "Secret representation"; TP 8006):
//
//	DHHC-1:<hh>:<base64(key || CRC-32(key) little-endian)>:
//
// <hh> is two decimal digits: 00 = use the key as is, 01/02/03 = transform
// it with HMAC-SHA-256/384/512 keyed by the key over the NQN and
// "NVMe-over-Fabrics" (Transform). The key is 32, 48 or 64 bytes.
//
// Encode returns the secret itself: never log it; String is redacted.
type Secret struct {
	// Transform is <hh>: the hash of the key transformation, HashNone for none.
	Transform HashID
	// Key is the decoded key, without the CRC.
	Key []byte
}

// Errors of ParseSecret and GenerateSecret.
var (
	ErrSecretFormat = errors.New("auth: secret is not in DHHC-1:<hh>:<base64>: form")
	ErrSecretHash   = errors.New("auth: secret transformation id <hh> must be 00, 01, 02 or 03")
	ErrSecretLength = errors.New("auth: secret key must be 32, 48 or 64 bytes")
	ErrSecretCRC    = errors.New("auth: secret CRC-32 mismatch (mistyped or truncated secret)")
)

const secretPrefix = "DHHC-1:"

// validKeyLen reports whether n is a key length the kernel accepts.
func validKeyLen(n int) bool { return n == 32 || n == 48 || n == 64 }

// ParseSecret decodes a DHHC-1 secret. Surrounding white space and the
// trailing ':' are optional (the kernel accepts both). The key length need
// not match <hh> (the kernel does not require it either).
func ParseSecret(s string) (Secret, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, secretPrefix) || len(s) < len(secretPrefix)+3 || s[len(secretPrefix)+2] != ':' {
		return Secret{}, ErrSecretFormat
	}
	hh := s[len(secretPrefix) : len(secretPrefix)+2]
	if hh[0] != '0' || hh[1] < '0' || hh[1] > '3' {
		return Secret{}, ErrSecretHash
	}
	b64 := strings.TrimSuffix(s[len(secretPrefix)+3:], ":")
	if strings.ContainsRune(b64, ':') {
		return Secret{}, ErrSecretFormat
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil {
		return Secret{}, fmt.Errorf("%w: base64: %v", ErrSecretFormat, err)
	}
	if len(raw) < 4 || !validKeyLen(len(raw)-4) {
		return Secret{}, fmt.Errorf("%w (decoded %d bytes with the CRC)", ErrSecretLength, len(raw))
	}
	key := raw[:len(raw)-4]
	if binary.LittleEndian.Uint32(raw[len(key):]) != crc32.ChecksumIEEE(key) {
		return Secret{}, ErrSecretCRC
	}
	return Secret{Transform: HashID(hh[1] - '0'), Key: key}, nil
}

// String is a redacted form ("DHHC-1:01:<32-byte key redacted>"), so a
// Secret (or a config holding one) printed with %v does not leak the key.
// Encode gives the real representation.
func (s Secret) String() string {
	return fmt.Sprintf("%s%02d:<%d-byte key redacted>", secretPrefix, uint8(s.Transform), len(s.Key))
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// Encode formats the secret in the DHHC-1 representation, as nvme-cli
// prints it (with the trailing ':'). It is the secret: never log it.
func (s Secret) Encode() string {
	raw := make([]byte, len(s.Key)+4)
	copy(raw, s.Key)
	binary.LittleEndian.PutUint32(raw[len(s.Key):], crc32.ChecksumIEEE(s.Key))
	return fmt.Sprintf("%s%02d:%s:", secretPrefix, uint8(s.Transform), base64.StdEncoding.EncodeToString(raw))
}

// Validate checks the transformation id and key length.
func (s Secret) Validate() error {
	if s.Transform > HashSHA512 {
		return ErrSecretHash
	}
	if !validKeyLen(len(s.Key)) {
		return ErrSecretLength
	}
	return nil
}

// GenerateSecret makes a random secret as `nvme gen-dhchap-key --hmac=hh
// --key-length=keyLen` does; keyLen 0 picks the length of hh's digest (32
// for HashNone). nvme-cli 2.x additionally ran the key through Transform
// with --nqn before encoding it; nvme-cli 3 dropped that. Here the key is
// never pre-transformed: the consumer (kernel, rdmablk) transforms it.
func GenerateSecret(rand io.Reader, hh HashID, keyLen int) (Secret, error) {
	if hh > HashSHA512 {
		return Secret{}, ErrSecretHash
	}
	if keyLen == 0 {
		keyLen = hh.Size()
		if keyLen == 0 {
			keyLen = 32
		}
	}
	if !validKeyLen(keyLen) {
		return Secret{}, ErrSecretLength
	}
	key := make([]byte, keyLen)
	if _, err := io.ReadFull(rand, key); err != nil {
		return Secret{}, fmt.Errorf("auth: reading random key: %w", err)
	}
	return Secret{Transform: hh, Key: key}, nil
}

// TransformKey returns the key the challenge responses are keyed with
// (§8.13.5.8; Linux nvme_auth_transform_key): the key itself when
// Transform is HashNone, else HMAC-H(key, nqn || "NVMe-over-Fabrics") with
// H the transformation hash. The host secret is transformed with the host
// NQN, the controller secret with the subsystem NQN.
func (s Secret) TransformKey(nqn string) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Transform == HashNone {
		return append([]byte(nil), s.Key...), nil
	}
	m := hmac.New(s.Transform.New(), s.Key)
	m.Write([]byte(nqn))
	m.Write([]byte("NVMe-over-Fabrics"))
	return m.Sum(nil), nil
}
