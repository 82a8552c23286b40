package attach

import (
	"fmt"
	"os"
	"strings"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

// Secret is a DH-HMAC-CHAP secret in a configuration ("DHHC-1:…:"). Its
// String, GoString, JSON and YAML forms are redacted, so a Config printed
// or marshalled never shows it; the value itself is only read by
// Config.secrets.
type Secret string

const redacted = "<redacted>"

func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString is String, for %#v.
func (s Secret) GoString() string { return s.String() }

// MarshalText is the redacted form (JSON, YAML and other encoders).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText takes the secret as is (YAML and JSON decoding).
func (s *Secret) UnmarshalText(b []byte) error {
	*s = Secret(b)
	return nil
}

// ReadSecretFile reads a DH-HMAC-CHAP secret from path: the first
// non-empty line. A file that others may read is refused, like ssh does
// with private keys: the secret is the host's identity.
func ReadSecretFile(path string) (auth.Secret, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return auth.Secret{}, err
	}
	if fi.Mode().Perm()&0o004 != 0 {
		return auth.Secret{}, fmt.Errorf("secret file %s is readable by everyone (mode %#o): chmod o-r it", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return auth.Secret{}, err
	}
	s, err := auth.ParseSecret(strings.TrimSpace(string(b)))
	if err != nil {
		return auth.Secret{}, fmt.Errorf("secret file %s: %w", path, err)
	}
	return s, nil
}

// secret resolves a key / key-file pair of a Config: nil when neither is
// set.
func secret(what string, key Secret, file string) (*auth.Secret, error) {
	switch {
	case key != "" && file != "":
		return nil, fmt.Errorf("%s and %s_file are both set: use one", what, what)
	case file != "":
		s, err := ReadSecretFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s_file: %w", what, err)
		}
		return &s, nil
	case key != "":
		s, err := auth.ParseSecret(string(key))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return &s, nil
	}
	return nil, nil
}

// secrets returns the host and controller secrets of c (nil when unset).
func (c *Config) secrets() (host, ctrl *auth.Secret, err error) {
	if host, err = secret("dhchap_secret", c.DHCHAPSecret, c.DHCHAPSecretFile); err != nil {
		return nil, nil, fmt.Errorf("attach: %s: %w", c.Name, err)
	}
	if ctrl, err = secret("dhchap_ctrl_secret", c.DHCHAPCtrlSecret, c.DHCHAPCtrlSecretFile); err != nil {
		return nil, nil, fmt.Errorf("attach: %s: %w", c.Name, err)
	}
	return host, ctrl, nil
}
