package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Error codes in ErrorBody.
const (
	CodeInvalid  = "invalid"
	CodeNotFound = "not_found"
	CodeExists   = "exists"
	CodeConflict = "conflict"
	// CodeStaleEpoch (409): a command an owner proposed carries an
	// ownership epoch that is no longer the volume's: the proposer was
	// replaced as owner (catalog.ErrStaleEpoch).
	CodeStaleEpoch = "stale_epoch"
	CodeNotLeader  = "not_leader"
	CodeNoLeader   = "no_leader"
	CodeTimeout    = "timeout"
	CodeInternal   = "internal"
	// CodeUnknown: the write was handed to raft but the leader lost its
	// leadership (or timed out) before it knew whether it committed. It
	// may or may not have taken effect; a retry of an idempotent write
	// (creates carry a request ID) settles it.
	CodeUnknown = "outcome_unknown"
	// CodeUnauthenticated (401): no usable identity was presented.
	CodeUnauthenticated = "unauthenticated"
	// CodeForbidden (403): the identity lacks the role the endpoint needs.
	CodeForbidden = "forbidden"
	// CodeMethod (405): the path exists, the method does not.
	CodeMethod = "method_not_allowed"
)

// Sentinels that Error.Is matches for the codes that are not catalogue
// outcomes. The server side maps the cluster package's errors to these
// codes; this package imports no raft.
var (
	ErrNotLeader       = errors.New("api: no leader reachable")
	ErrTimeout         = errors.New("api: timed out")
	ErrOutcomeUnknown  = errors.New("api: outcome unknown")
	ErrUnauthenticated = errors.New("api: unauthenticated")
	ErrForbidden       = errors.New("api: forbidden")
)

// Error is an API error as the client sees it.
type Error struct {
	Status  int    // HTTP status
	Code    string // one of the Code* constants
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code) }

// Is maps codes to the catalog sentinels and this package's.
func (e *Error) Is(target error) bool {
	switch e.Code {
	case CodeInvalid:
		return target == catalog.ErrInvalid
	case CodeNotFound:
		return target == catalog.ErrNotFound
	case CodeExists:
		return target == catalog.ErrExists
	case CodeConflict:
		return target == catalog.ErrConflict
	case CodeStaleEpoch:
		return target == catalog.ErrStaleEpoch
	case CodeNotLeader, CodeNoLeader:
		return target == ErrNotLeader
	case CodeTimeout:
		return target == ErrTimeout
	case CodeUnknown:
		return target == ErrOutcomeUnknown
	case CodeUnauthenticated:
		return target == ErrUnauthenticated
	case CodeForbidden:
		return target == ErrForbidden
	}
	return false
}

// DecodeError turns a non-2xx answer into an *Error; a body that is not
// an ErrorBody (a proxy's page, a TLS server's plain-HTTP reply) becomes
// CodeInternal with the body as message.
func DecodeError(status int, body []byte) *Error {
	var eb ErrorBody
	if json.Unmarshal(body, &eb) != nil || eb.Error.Code == "" {
		return &Error{Status: status, Code: CodeInternal, Message: string(bytes.TrimSpace(body))}
	}
	return &Error{Status: status, Code: eb.Error.Code, Message: eb.Error.Message}
}
