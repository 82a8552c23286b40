package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/rdmablk/rdmablk/nvme/auth"
	"github.com/rdmablk/rdmablk/target"
)

// HostConfig is one host of a subsystem. In the file it is either the
// host NQN alone:
//
//	hosts:
//	  - nqn.2014-08.org.nvmexpress:uuid:…
//
// or a mapping that also gives the host's DH-HMAC-CHAP secrets (NVMe
// in-band authentication; docs/security.md):
//
//	hosts:
//	  - nqn: nqn.2014-08.org.nvmexpress:uuid:…
//	    dhchap_secret_file: /etc/rdmablk/secrets/host1.key
//	    dhchap_ctrl_secret_file: /etc/rdmablk/secrets/host1.ctrl.key
//
// A secret comes from exactly one of the key itself (dhchap_secret), a
// file (…_file: the DHHC-1 string on its first line; a relative path is
// taken from $CREDENTIALS_DIRECTORY when systemd's LoadCredential= set it,
// else from the working directory; a file others may read is refused) or
// an environment variable (…_env: its name). Secrets are never logged and
// --print-config shows them redacted.
type HostConfig struct {
	NQN string `mapstructure:"nqn"`
	// DHCHAPSecret is the host secret (nvme-cli --dhchap-secret): the
	// host must authenticate with it.
	DHCHAPSecret     string `mapstructure:"dhchap_secret"`
	DHCHAPSecretFile string `mapstructure:"dhchap_secret_file"`
	DHCHAPSecretEnv  string `mapstructure:"dhchap_secret_env"`
	// DHCHAPCtrlSecret is the controller secret (nvme-cli
	// --dhchap-ctrl-secret): with it the host may also authenticate the
	// target (bidirectional).
	DHCHAPCtrlSecret     string `mapstructure:"dhchap_ctrl_secret"`
	DHCHAPCtrlSecretFile string `mapstructure:"dhchap_ctrl_secret_file"`
	DHCHAPCtrlSecretEnv  string `mapstructure:"dhchap_ctrl_secret_env"`
	// DHCHAPHashes / DHCHAPDHGroups override the subsystem's lists for
	// this host.
	DHCHAPHashes   []string `mapstructure:"dhchap_hashes"`
	DHCHAPDHGroups []string `mapstructure:"dhchap_dhgroups"`
}

// ConfScalarForm marks HostConfig as writable as a single scalar (the
// NQN) for confkeys.
func (HostConfig) ConfScalarForm() {}

// secretKeys are the configuration keys whose values are secrets:
// --print-config redacts them.
var secretKeys = map[string]bool{"dhchap_secret": true, "dhchap_ctrl_secret": true}

// hasSecret reports whether the host has a host secret from any source.
func (h *HostConfig) hasSecret() bool {
	return h.DHCHAPSecret != "" || h.DHCHAPSecretFile != "" || h.DHCHAPSecretEnv != ""
}

// hostAuth builds the host's target.HostAuth (nil when it has no secret)
// from the host's keys and its subsystem's defaults, reading secret files
// and variables. Errors name the key, never the secret.
func (h *HostConfig) hostAuth(s *SubsysConfig) (*target.HostAuth, error) {
	if !h.hasSecret() {
		if h.DHCHAPCtrlSecret != "" || h.DHCHAPCtrlSecretFile != "" || h.DHCHAPCtrlSecretEnv != "" {
			return nil, errors.New("a controller secret (dhchap_ctrl_secret…) needs a host secret (dhchap_secret…)")
		}
		if len(h.DHCHAPHashes) > 0 || len(h.DHCHAPDHGroups) > 0 {
			return nil, errors.New("dhchap_hashes / dhchap_dhgroups without a host secret (dhchap_secret…)")
		}
		return nil, nil
	}
	var a target.HostAuth
	sec, err := loadSecret("dhchap_secret", h.DHCHAPSecret, h.DHCHAPSecretFile, h.DHCHAPSecretEnv)
	if err != nil {
		return nil, err
	}
	a.Secret = *sec
	if a.CtrlSecret, err = loadSecret("dhchap_ctrl_secret", h.DHCHAPCtrlSecret, h.DHCHAPCtrlSecretFile, h.DHCHAPCtrlSecretEnv); err != nil {
		return nil, err
	}
	hashes, groups := s.DHCHAPHashes, s.DHCHAPDHGroups
	if len(h.DHCHAPHashes) > 0 {
		hashes = h.DHCHAPHashes
	}
	if len(h.DHCHAPDHGroups) > 0 {
		groups = h.DHCHAPDHGroups
	}
	if a.Hashes, err = parseHashes(hashes); err != nil {
		return nil, err
	}
	if a.DHGroups, err = parseDHGroups(groups); err != nil {
		return nil, err
	}
	return &a, nil
}

func parseHashes(names []string) ([]auth.HashID, error) {
	if len(names) == 0 {
		return nil, nil // all
	}
	out := make([]auth.HashID, 0, len(names))
	for _, n := range names {
		h, err := auth.ParseHash(strings.TrimSpace(n))
		if err != nil {
			return nil, fmt.Errorf("dhchap_hashes: %w", err)
		}
		out = append(out, h)
	}
	return out, nil
}

func parseDHGroups(names []string) ([]auth.DHGroupID, error) {
	if len(names) == 0 {
		return nil, nil // all
	}
	out := make([]auth.DHGroupID, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			// YAML reads a bare null as no value at all.
			return nil, fmt.Errorf("dhchap_dhgroups: empty entry (write the null group quoted, \"null\": bare null is YAML's empty value)")
		}
		g, err := auth.ParseDHGroup(n)
		if err != nil {
			return nil, fmt.Errorf("dhchap_dhgroups: %w", err)
		}
		out = append(out, g)
	}
	return out, nil
}

// loadSecret reads the secret named key from exactly one of its sources
// (nil, nil when none is given). Errors never quote the secret.
func loadSecret(key, inline, file, env string) (*auth.Secret, error) {
	n := 0
	for _, v := range []string{inline, file, env} {
		if v != "" {
			n++
		}
	}
	switch n {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, fmt.Errorf("%s: give one of %s, %s_file and %s_env", key, key, key, key)
	}
	src, text := key, inline
	switch {
	case file != "":
		src = key + "_file " + file
		b, err := readSecretFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s_file: %w", key, err)
		}
		text, _, _ = strings.Cut(string(b), "\n")
	case env != "":
		src = key + "_env " + env
		if strings.HasPrefix(env, EnvPrefix) {
			return nil, fmt.Errorf("%s_env %s: the %s prefix belongs to rdmablkd's own settings; name the variable otherwise", key, env, EnvPrefix)
		}
		v, ok := os.LookupEnv(env)
		if !ok || v == "" {
			return nil, fmt.Errorf("%s_env: variable %s is not set", key, env)
		}
		text = v
	}
	s, err := auth.ParseSecret(text)
	if err != nil {
		// auth's errors describe the format, never the value.
		return nil, fmt.Errorf("%s: %w (want the DHHC-1:<hh>:<base64>: string of nvme gen-dhchap-key)", src, err)
	}
	return &s, nil
}

// readSecretFile reads a secret file. A relative path is taken from
// $CREDENTIALS_DIRECTORY when set (systemd credentials; that directory
// is private to the service), else from the working directory. Outside
// the credentials directory a file that group or others may access is
// refused, as cluster.auth.node_token_file is.
func readSecretFile(p string) ([]byte, error) {
	creds := os.Getenv("CREDENTIALS_DIRECTORY")
	if !filepath.IsAbs(p) && creds != "" {
		p = filepath.Join(creds, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, unwrapPath(err)
	}
	inCreds := creds != "" && strings.HasPrefix(p, filepath.Clean(creds)+string(filepath.Separator))
	if !inCreds && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is accessible by group or others (mode %v): chmod 600 it", p, fi.Mode().Perm())
	}
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return nil, fmt.Errorf("%s: want a regular file holding one DHHC-1 secret", p)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, unwrapPath(err)
	}
	return b, nil
}

// validateAuth checks the authentication keys of subsystem s, reading
// every secret once; it returns one error per problem, naming the
// subsystem, the host and the key.
func (s *SubsysConfig) validateAuth() []error {
	var errs []error
	if _, err := parseHashes(s.DHCHAPHashes); err != nil {
		errs = append(errs, fmt.Errorf("config: subsystem %q: %w", s.NQN, err))
	}
	if _, err := parseDHGroups(s.DHCHAPDHGroups); err != nil {
		errs = append(errs, fmt.Errorf("config: subsystem %q: %w", s.NQN, err))
	}
	seen, secrets := map[string]bool{}, 0
	for i := range s.Hosts {
		h := &s.Hosts[i]
		if h.NQN == "" {
			errs = append(errs, fmt.Errorf("config: subsystem %q: hosts[%d]: nqn is required", s.NQN, i))
			continue
		}
		if seen[h.NQN] {
			errs = append(errs, fmt.Errorf("config: subsystem %q: host %s listed twice", s.NQN, h.NQN))
		}
		seen[h.NQN] = true
		if _, err := h.hostAuth(s); err != nil {
			errs = append(errs, fmt.Errorf("config: subsystem %q: host %s: %w", s.NQN, h.NQN, err))
		}
		if h.hasSecret() {
			secrets++
		}
	}
	if s.DHCHAPRequired && secrets == 0 {
		errs = append(errs, fmt.Errorf("config: subsystem %q: dhchap_required, but no host has a dhchap_secret: no host could connect", s.NQN))
	}
	return errs
}

// targetHosts returns the allow list and the DH-HMAC-CHAP configuration
// of s's hosts for target.SubsystemConfig.
func (s *SubsysConfig) targetHosts() ([]string, map[string]target.HostAuth, error) {
	var nqns []string
	var auths map[string]target.HostAuth
	for i := range s.Hosts {
		h := &s.Hosts[i]
		nqns = append(nqns, h.NQN)
		a, err := h.hostAuth(s)
		if err != nil {
			return nil, nil, fmt.Errorf("host %s: %w", h.NQN, err)
		}
		if a != nil {
			if auths == nil {
				auths = map[string]target.HostAuth{}
			}
			auths[h.NQN] = *a
		}
	}
	return nqns, auths, nil
}

// decodeHook is the configuration decoder's hook: viper's own (a
// duration from a string with a unit; a list of strings from one
// comma-separated string), plus a host entry from its NQN alone.
func decodeHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String {
		return data, nil
	}
	s, _ := data.(string)
	switch {
	case to == reflect.TypeOf(time.Duration(0)):
		return time.ParseDuration(s)
	case to == reflect.TypeOf(HostConfig{}):
		return HostConfig{NQN: s}, nil
	case to.Kind() == reflect.Slice:
		if s == "" {
			return []string{}, nil
		}
		return strings.Split(s, ","), nil
	}
	return data, nil
}

// PrintableSettings returns the effective configuration for
// --print-config with every secret value replaced by "<redacted>".
func PrintableSettings(settings map[string]any) map[string]any {
	out, _ := redact(settings).(map[string]any)
	return out
}

func redact(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if secretKeys[strings.ToLower(k)] {
				if s, ok := e.(string); ok && s == "" {
					out[k] = e
				} else {
					out[k] = "<redacted>"
				}
				continue
			}
			out[k] = redact(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[fmt.Sprint(k)] = e
		}
		return redact(out)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redact(e)
		}
		return out
	case []map[string]any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = redact(e)
		}
		return out
	}
	return v
}

// transcriptWriter opens target.dhchap_transcript for appending and
// returns the hook that writes one JSON line per transcript.
func transcriptWriter(path string, log *slog.Logger) (func(*auth.Transcript), *os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("target.dhchap_transcript: %w", err)
	}
	log.Warn("DH-HMAC-CHAP transcripts, secrets included, are written to a file: lab use only", "path", path)
	var mu sync.Mutex
	return func(tr *auth.Transcript) {
		b, err := json.Marshal(tr)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.Write(append(b, '\n')); err != nil {
			log.Warn("writing a DH-HMAC-CHAP transcript", "err", err)
		}
	}, f, nil
}
