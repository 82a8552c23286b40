package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmablk/rdmablk/nvme"
)

// Where the host identity comes from, as nvme-cli: the files of
// /etc/nvme first (nvme-cli and the kernel host then present the same
// identity), then one derived from /etc/machine-id, then one generated
// once and stored in the user's configuration directory.
const (
	etcHostNQN = "/etc/nvme/hostnqn"
	etcHostID  = "/etc/nvme/hostid"
)

// identityFiles are the paths identity reads; tests point them elsewhere.
var identityFiles = struct {
	hostNQN, hostID, machineID string
	// storeDir returns the directory of the stored generated host ID.
	storeDir func() (string, error)
}{
	hostNQN: etcHostNQN, hostID: etcHostID, machineID: "/etc/machine-id",
	storeDir: func() (string, error) {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(d, "rdmablk"), nil
	},
}

// hostIdentity is the host NQN and host ID presented in Fabrics Connect
// (NVMe over Fabrics 1.1 §3.3: HOSTID, HOSTNQN).
type hostIdentity struct {
	NQN string
	ID  [16]byte
	// Source says where NQN and ID came from, for logs and errors.
	Source string
}

// identity resolves the host identity once: --hostnqn / --hostid, else
// /etc/nvme/hostnqn and /etc/nvme/hostid, else an ID derived from
// /etc/machine-id (stable per machine, the same for every user), else a
// random ID generated once and stored in $XDG_CONFIG_HOME/rdmablk/hostid
// (said on stderr when it is created). A missing host NQN is the UUID
// form of the host ID; a missing host ID is taken from a UUID-form host
// NQN, as nvme-cli does.
func (g *globals) identity() error {
	if g.ident.NQN != "" {
		return nil
	}
	nqn, nqnSrc := g.hostnqn, "--hostnqn"
	if nqn == "" {
		n, err := readIdentityFile(identityFiles.hostNQN)
		if err != nil {
			return err
		}
		nqn, nqnSrc = n, identityFiles.hostNQN
	}
	if nqn != "" && !nvme.ValidNQN(nqn) {
		return fmt.Errorf("host NQN %q (from %s): not a valid NQN (nqn.yyyy-mm.reverse.domain:name or nqn.2014-08.org.nvmexpress:uuid:UUID)", nqn, nqnSrc)
	}
	idText, idSrc := g.hostid, "--hostid"
	if idText == "" {
		t, err := readIdentityFile(identityFiles.hostID)
		if err != nil {
			return err
		}
		idText, idSrc = t, identityFiles.hostID
	}
	var id [16]byte
	switch {
	case idText != "":
		u, ok := parseUUID(idText)
		if !ok {
			return fmt.Errorf("host ID %q (from %s): want a UUID (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", idText, idSrc)
		}
		id = u
	case strings.HasPrefix(nqn, "nqn.2014-08.org.nvmexpress:uuid:"):
		id, _ = parseUUID(strings.TrimPrefix(nqn, "nqn.2014-08.org.nvmexpress:uuid:"))
		idSrc = "the host NQN's UUID"
	default:
		var err error
		if id, idSrc, err = generatedHostID(g); err != nil {
			return err
		}
	}
	if nqn == "" {
		nqn, nqnSrc = nvme.HostNQNFromUUID(id), "the host ID"
	}
	g.ident = hostIdentity{NQN: nqn, ID: id, Source: fmt.Sprintf("host NQN from %s, host ID from %s", nqnSrc, idSrc)}
	slog.Debug("host identity", "hostnqn", nqn, "hostid", formatUUID(id), "source", g.ident.Source)
	return nil
}

// readIdentityFile returns the first line of path, "" when it does not
// exist or is empty.
func readIdentityFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("host identity: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

// generatedHostID derives the host ID from /etc/machine-id, or reads (or
// creates) the stored one.
func generatedHostID(g *globals) ([16]byte, string, error) {
	if m, err := readIdentityFile(identityFiles.machineID); err == nil && len(m) >= 16 {
		// An application-specific ID: the machine ID itself is not exposed.
		sum := sha256.Sum256([]byte("rdmablk host ID\x00" + m))
		var id [16]byte
		copy(id[:], sum[:16])
		return uuidV8(id), "derived from " + identityFiles.machineID, nil
	}
	dir, err := identityFiles.storeDir()
	if err != nil {
		return [16]byte{}, "", fmt.Errorf("host identity: no %s, %s or %s, and no directory to store a generated one: %w (pass --hostnqn/--hostid)",
			identityFiles.hostNQN, identityFiles.hostID, identityFiles.machineID, err)
	}
	path := filepath.Join(dir, "hostid")
	if t, err := readIdentityFile(path); err != nil {
		return [16]byte{}, "", err
	} else if t != "" {
		u, ok := parseUUID(t)
		if !ok {
			return [16]byte{}, "", fmt.Errorf("host identity: %s holds %q, not a UUID (remove it to generate a new one)", path, t)
		}
		return u, path, nil
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return [16]byte{}, "", err
	}
	id[6] = id[6]&0x0f | 0x40 // version 4 (random)
	id[8] = id[8]&0x3f | 0x80
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return [16]byte{}, "", fmt.Errorf("host identity: storing a generated host ID: %w (pass --hostnqn/--hostid)", err)
	}
	if err := os.WriteFile(path, []byte(formatUUID(id)+"\n"), 0o644); err != nil {
		return [16]byte{}, "", fmt.Errorf("host identity: storing a generated host ID: %w (pass --hostnqn/--hostid)", err)
	}
	fmt.Fprintf(g.stderr, "rdmablk: generated host ID %s, stored in %s (host NQN %s); write them to %s and %s to share them with nvme-cli\n",
		formatUUID(id), path, nvme.HostNQNFromUUID(id), etcHostID, etcHostNQN)
	return id, path, nil
}

func uuidV8(id [16]byte) [16]byte {
	id[6] = id[6]&0x0f | 0x80 // version 8 (custom), RFC 9562
	id[8] = id[8]&0x3f | 0x80
	return id
}

// parseUUID parses the 8-4-4-4-12 hex form.
func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	h := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(u[:], []byte(h)); err != nil {
		return u, false
	}
	return u, true
}

// formatUUID is the 8-4-4-4-12 lower-case hex form.
func formatUUID(u [16]byte) string {
	return strings.TrimPrefix(nvme.HostNQNFromUUID(u), "nqn.2014-08.org.nvmexpress:uuid:")
}
