package agent

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// NodeToken reads the cluster's node token from file. When the file does
// not exist and create is set (the bootstrapping node), a fresh random
// token (256 bits) is written there with mode 0600 first, for the other
// nodes to be given. A token file readable by group or others is refused.
func NodeToken(file string, create bool, log *slog.Logger) (string, error) {
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) && create {
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return "", err
		}
		tok := base64.RawURLEncoding.EncodeToString(raw[:])
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			return "", err
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", err
		}
		_, err = f.WriteString(tok + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		log.Info("cluster node token created; give this file to the other nodes (mode 0600)", "file", file)
		return tok, nil
	}
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%s is readable by others (mode %v): chmod 600 it", file, fi.Mode().Perm())
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 16 {
		return "", fmt.Errorf("%s: token too short (want at least 16 characters)", file)
	}
	return tok, nil
}
