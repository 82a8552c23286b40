package nvme

import "errors"

// Decoding and encoding errors. They describe bad input (a malformed
// buffer from the wire, or a value that does not fit its field); no
// function in this package panics on bad input.
var (
	// ErrShort: the buffer is shorter than the structure.
	ErrShort = errors.New("nvme: buffer too short")
	// ErrBadNQN: an NQN field is not NUL-terminated or too long.
	ErrBadNQN = errors.New("nvme: malformed NQN")
	// ErrBadRecfmt: an unsupported record format.
	ErrBadRecfmt = errors.New("nvme: unsupported record format")
	// ErrTooLong: a string does not fit its fixed-size field (transport
	// address, service identifier), where truncating would change meaning.
	ErrTooLong = errors.New("nvme: string too long for its field")
	// ErrTooMany: the entries do not fit the structure or the buffer.
	ErrTooMany = errors.New("nvme: too many entries")
	// ErrBadDescriptor: a list entry or descriptor is malformed (e.g. a
	// namespace identification descriptor with a wrong length).
	ErrBadDescriptor = errors.New("nvme: malformed descriptor")
)
