package catalog

import "errors"

// Errors returned by Apply (wrapped with context; test with errors.Is).
// They are part of the replicated outcome: every node returns the same one
// for the same command.
var (
	// ErrNotFound: the named node, volume, subsystem, namespace or host
	// does not exist.
	ErrNotFound = errors.New("catalog: not found")
	// ErrExists: the name (volume, subsystem NQN, NSID, host) is taken.
	ErrExists = errors.New("catalog: already exists")
	// ErrInvalid: a field is malformed or out of range.
	ErrInvalid = errors.New("catalog: invalid argument")
	// ErrConflict: the command is well formed but the current state
	// forbids it (deleting a volume that a subsystem exports, shrinking a
	// volume, exporting a volume of another node, ...).
	ErrConflict = errors.New("catalog: conflicts with current state")
	// ErrStaleEpoch: a command an owner proposed about its volume's
	// replicas carries an ownership epoch that is no longer the volume's
	// (Volume.Epoch): the proposer has been replaced as owner (failover)
	// and must stop serving the volume. Nothing changed.
	ErrStaleEpoch = errors.New("catalog: stale ownership epoch")
	// ErrVersion: the command or snapshot format version is unknown to
	// this node.
	ErrVersion = errors.New("catalog: unsupported format version")
)
