package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmablk/rdmablk/nvme/auth"
)

// newGenDHCHAPKey is `rdmablk gen-dhchap-key`, nvme-cli's gen-dhchap-key:
// a random DH-HMAC-CHAP secret in the DHHC-1 representation.
func newGenDHCHAPKey() *cobra.Command {
	var (
		keyLen int
		hmac   int
		nqn    string
		secret string
	)
	cmd := &cobra.Command{
		Use:   "gen-dhchap-key",
		Short: "Print a new DH-HMAC-CHAP secret (DHHC-1:hh:base64:) for --dhchap-secret, as nvme gen-dhchap-key",
		Long: `gen-dhchap-key prints a random DH-HMAC-CHAP secret in the representation
nvme-cli, the Linux kernel and rdmablkd read: DHHC-1:<hh>:<base64 of the key
and its CRC-32>:. --hmac (0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512) is <hh>:
the hash the key is transformed with, together with the NQN, when it is
used. --key-length is 32, 48 or 64 bytes (default: the hash's size, 32 for
none).

--nqn is accepted for nvme-cli compatibility and does not change the
output: nvme-cli 2.x pre-transformed the key with it, nvme-cli 3 does not,
and neither does rdmablk — whoever uses the secret transforms it with its
NQN (so the same secret works with the kernel, nvme-cli 3 and rdmablk).

Give the printed value to the host (--dhchap-secret, or the attachment
config's dhchap_secret_file) and to the target for this host's NQN.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hmac < 0 || hmac > 3 {
				return fmt.Errorf("--hmac %d: want 0 (none), 1 (SHA-256), 2 (SHA-384) or 3 (SHA-512)", hmac)
			}
			if keyLen != 0 && keyLen != 32 && keyLen != 48 && keyLen != 64 {
				return fmt.Errorf("--key-length %d: want 32, 48 or 64", keyLen)
			}
			hh := auth.HashID(hmac)
			var s auth.Secret
			if secret != "" {
				key, err := hex.DecodeString(strings.TrimSpace(secret))
				if err != nil {
					return fmt.Errorf("--secret: not hexadecimal: %w", err)
				}
				if keyLen != 0 && len(key) != keyLen {
					return fmt.Errorf("--secret is %d bytes, --key-length says %d", len(key), keyLen)
				}
				s = auth.Secret{Transform: hh, Key: key}
				if err := s.Validate(); err != nil {
					return fmt.Errorf("--secret: %w", err)
				}
			} else {
				var err error
				if s, err = auth.GenerateSecret(rand.Reader, hh, keyLen); err != nil {
					return err
				}
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), s.Encode())
			return err
		},
	}
	f := cmd.Flags()
	f.IntVarP(&keyLen, "key-length", "l", 0, "key length in bytes: 32, 48 or 64 (default: the --hmac hash's size, 32 for none)")
	f.IntVarP(&hmac, "hmac", "m", 0, "key transformation hash: 0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512")
	// A local --nqn shadows the global (subsystem) --nqn, as nvme-cli's
	// host NQN option.
	f.StringVarP(&nqn, "nqn", "n", "", "host NQN (accepted for nvme-cli compatibility; the key is not pre-transformed)")
	f.StringVar(&secret, "secret", "", "use this key (hexadecimal) instead of a random one")
	return cmd
}
