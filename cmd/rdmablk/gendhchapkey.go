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
// a DH-HMAC-CHAP secret in the DHHC-1 representation, made the way
// nvme-cli makes it, so the same flags give the same output for a given
// --secret.
func newGenDHCHAPKey(g *globals) *cobra.Command {
	var (
		keyLen int
		hmac   int
		nqn    string
		secret string
	)
	cmd := &cobra.Command{
		Use:   "gen-dhchap-key",
		Short: "Print a new DH-HMAC-CHAP secret (DHHC-1:hh:base64:) for --dhchap-secret, as nvme gen-dhchap-key",
		Long: `gen-dhchap-key prints a DH-HMAC-CHAP secret in the representation nvme-cli,
the Linux kernel and rdmablkd read: DHHC-1:<hh>:<base64 of the key and its
CRC-32>:. Give it to the host (--dhchap-secret, or an attachment's
dhchap_secret_file) and to the target for this host's NQN.

--hmac (0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512) is <hh>: the hash whoever
uses the secret transforms it with, together with its NQN. --key-length is
32, 48 or 64 bytes; with --hmac it must be (and defaults to) that hash's
size, without it the default is 32.

As nvme-cli (2.x, and libnvme's gen_dhchap_key since), a key with --hmac
1-3 is first transformed with the host NQN: HMAC(key, NQN ||
"NVMe-over-Fabrics"). --nqn names that NQN; the default is this host's
(--hostnqn, /etc/nvme/hostnqn, else the generated one rdmablk presents).
For a random key this changes nothing but the bytes printed; it makes
--secret (a given key, in hexadecimal) print what nvme-cli prints.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hmac < 0 || hmac > 3 {
				return fmt.Errorf("--hmac %d: want 0 (none), 1 (SHA-256), 2 (SHA-384) or 3 (SHA-512)", hmac)
			}
			hh := auth.HashID(hmac)
			switch {
			case hh != auth.HashNone && keyLen == 0:
				keyLen = hh.Size()
			case hh != auth.HashNone && keyLen != hh.Size():
				return fmt.Errorf("--key-length %d does not fit --hmac %d (%v: %d bytes)", keyLen, hmac, hh, hh.Size())
			case keyLen == 0:
				keyLen = 32
			case keyLen != 32 && keyLen != 48 && keyLen != 64:
				return fmt.Errorf("--key-length %d: want 32, 48 or 64", keyLen)
			}
			var key []byte
			if secret != "" {
				var err error
				if key, err = hex.DecodeString(strings.TrimSpace(secret)); err != nil {
					return fmt.Errorf("--secret: not hexadecimal: %w", err)
				}
				if len(key) != keyLen {
					return fmt.Errorf("--secret is %d bytes, want %d (--key-length)", len(key), keyLen)
				}
			} else {
				s, err := auth.GenerateSecret(rand.Reader, auth.HashNone, keyLen)
				if err != nil {
					return err
				}
				key = s.Key
			}
			s := auth.Secret{Transform: hh, Key: key}
			if hh != auth.HashNone {
				if nqn == "" {
					if err := g.identity(); err != nil {
						return fmt.Errorf("--hmac %d transforms the key with the host NQN: %w (or pass --nqn)", hmac, err)
					}
					nqn = g.ident.NQN
				}
				var err error
				if s.Key, err = (auth.Secret{Transform: hh, Key: key}).TransformKey(nqn); err != nil {
					return err
				}
			}
			if err := s.Validate(); err != nil {
				return err
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), s.Encode())
			return err
		},
	}
	f := cmd.Flags()
	f.IntVarP(&keyLen, "key-length", "l", 0, "key length in bytes: 32, 48 or 64 (default: the --hmac hash's size, 32 without)")
	f.IntVarP(&hmac, "hmac", "m", 0, "hash of the key transformation: 0 none, 1 SHA-256, 2 SHA-384, 3 SHA-512")
	// A local --nqn shadows the global (subsystem) --nqn: in nvme-cli it
	// is the host NQN.
	f.StringVarP(&nqn, "nqn", "n", "", "host NQN the key is transformed with when --hmac is 1-3 (default: this host's)")
	f.StringVar(&secret, "secret", "", "use this key (hexadecimal) instead of a random one")
	return cmd
}
