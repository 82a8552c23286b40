package nvme

import (
	"bytes"
	"strings"
)

// Fixed-size string fields. The base spec (§1.5 "Conventions", ASCII string
// fields) left-justifies ASCII strings and pads them with spaces (SN, MN, FR,
// FRS, and per NVMe-oF practice TRADDR and TRSVCID); NQN fields are UTF-8,
// NUL terminated and NUL padded (§4.5).

// putSpacePadded writes s into dst, truncated to len(dst) and padded with
// spaces. Bytes outside printable ASCII (0x20..0x7E) are written as '?'
// so the field stays ASCII even when a UTF-8 string is cut.
func putSpacePadded(dst []byte, s string) {
	n := copy(dst, s)
	for i := 0; i < n; i++ {
		if dst[i] < 0x20 || dst[i] > 0x7e {
			dst[i] = '?'
		}
	}
	for i := n; i < len(dst); i++ {
		dst[i] = ' '
	}
}

// putPadded writes s into dst padding with spaces, without any
// substitution; the caller has checked that s fits and holds no NUL (it
// is for addresses, where truncation would change meaning).
func putPadded(dst []byte, s string) {
	n := copy(dst, s)
	for i := n; i < len(dst); i++ {
		dst[i] = ' '
	}
}

// trimPadded returns the field without trailing spaces and NULs (decoders
// accept both paddings: Linux nvmet pads TRADDR with NULs, SPDK with
// spaces). Anything from the first NUL on is dropped.
func trimPadded(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(bytes.TrimRight(b, " "))
}

// putNQN writes an NQN into a NUL-padded field. It returns ErrBadNQN,
// writing nothing, if the NQN is longer than MaxNQNLength or holds a NUL.
func putNQN(dst []byte, s string) error {
	if len(s) > MaxNQNLength || len(s) >= len(dst) || strings.IndexByte(s, 0) >= 0 {
		return ErrBadNQN
	}
	n := copy(dst, s)
	clear(dst[n:])
	return nil
}
