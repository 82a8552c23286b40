package nvme

import (
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

// NVMe Qualified Names (NVMe base spec 2.0 §4.5).

// DiscoveryNQN is the well-known NQN of a discovery subsystem.
const DiscoveryNQN = "nqn.2014-08.org.nvmexpress.discovery"

// nqnUUIDPrefix starts the UUID-based NQN form.
const nqnUUIDPrefix = "nqn.2014-08.org.nvmexpress:uuid:"

// ValidNQN reports whether s is a well-formed NQN per §4.5: at most
// MaxNQNLength bytes of UTF-8 without control characters, and either
// "nqn.yyyy-mm.<reverse domain>[:<string>]" (month 01-12) or
// "nqn.2014-08.org.nvmexpress:uuid:" followed by a UUID in 8-4-4-4-12 hex
// form. DiscoveryNQN is valid. (Linux nvmet accepts any name, such as
// "testnqn"; whether to insist on this form is the caller's policy.)
func ValidNQN(s string) bool {
	if len(s) > MaxNQNLength || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return false
		}
	}
	if rest, ok := strings.CutPrefix(s, nqnUUIDPrefix); ok {
		return validUUID(rest)
	}
	// "nqn." yyyy "-" mm "." domain
	const head = len("nqn.yyyy-mm.")
	if len(s) <= head || !strings.HasPrefix(s, "nqn.") {
		return false
	}
	for _, i := range []int{4, 5, 6, 7, 9, 10} {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	if s[8] != '-' || s[11] != '.' {
		return false
	}
	month := int(s[9]-'0')*10 + int(s[10]-'0')
	if month < 1 || month > 12 {
		return false
	}
	// The reverse domain name must not be empty.
	return s[head] != ':' && s[head] != '.'
}

// validUUID reports the canonical 36-character UUID text form.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// HostNQNFromUUID returns the UUID-based NQN for u,
// "nqn.2014-08.org.nvmexpress:uuid:xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
// (lower-case hex), the form nvme-cli generates for /etc/nvme/hostnqn.
func HostNQNFromUUID(u [16]byte) string {
	var b [36]byte
	hex.Encode(b[0:8], u[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], u[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], u[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], u[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], u[10:16])
	return nqnUUIDPrefix + string(b[:])
}
