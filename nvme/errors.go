package nvme

import "errors"

// Decoding errors.
var (
	// ErrShort: the buffer is shorter than the structure.
	ErrShort = errors.New("nvme: buffer too short")
	// ErrBadNQN: an NQN field is not NUL-terminated or too long.
	ErrBadNQN = errors.New("nvme: malformed NQN")
	// ErrBadRecfmt: an unsupported record format.
	ErrBadRecfmt = errors.New("nvme: unsupported record format")
)
