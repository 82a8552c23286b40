package target

import "errors"

// Control-path errors. Methods wrap them with context; test with errors.Is.
// The command path reports NVMe status codes instead (nvme.Status).
var (
	// ErrClosed: the Target was closed.
	ErrClosed = errors.New("target: closed")
	// ErrPortExists: AddPort with a port ID already in use.
	ErrPortExists = errors.New("target: port already exists")
	// ErrNoPort: the port ID is unknown.
	ErrNoPort = errors.New("target: no such port")
	// ErrBadPort: the port's capabilities are unusable (see AddPort).
	ErrBadPort = errors.New("target: invalid port")
	// ErrSubsystemExists: AddSubsystem with an NQN already in use.
	ErrSubsystemExists = errors.New("target: subsystem already exists")
	// ErrNoSubsystem: the subsystem NQN is unknown (or was removed).
	ErrNoSubsystem = errors.New("target: no such subsystem")
	// ErrBadNQN: a subsystem or host NQN is malformed (nvme.ValidNQN), or
	// is the discovery NQN where a subsystem NQN is required.
	ErrBadNQN = errors.New("target: invalid NQN")
	// ErrBadConfig: a configuration field is out of range (serial or model
	// too long, ...).
	ErrBadConfig = errors.New("target: invalid configuration")
	// ErrNamespaceExists: AddNamespace with an NSID already in use.
	ErrNamespaceExists = errors.New("target: namespace already exists")
	// ErrNoNamespace: the NSID is not attached to the subsystem.
	ErrNoNamespace = errors.New("target: no such namespace")
	// ErrBadNSID: the NSID is outside 1..MaxNSID.
	ErrBadNSID = errors.New("target: invalid namespace ID")
	// ErrBadBackend: the backend is nil, empty or has an invalid block size.
	ErrBadBackend = errors.New("target: invalid backend")
	// ErrHostExists: AddHost for a host already allowed.
	ErrHostExists = errors.New("target: host already allowed")
	// ErrNoHost: RemoveHost for a host that is not in the list.
	ErrNoHost = errors.New("target: no such host")
	// ErrBadDepth: NewQueue with a queue depth outside 2..65536.
	ErrBadDepth = errors.New("target: invalid queue depth")
)
