package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// Error codes in ErrorBody.
const (
	CodeInvalid   = "invalid"
	CodeNotFound  = "not_found"
	CodeExists    = "exists"
	CodeConflict  = "conflict"
	CodeNotLeader = "not_leader"
	CodeNoLeader  = "no_leader"
	CodeTimeout   = "timeout"
	CodeInternal  = "internal"
)

// Error is an API error as the client sees it.
type Error struct {
	Status  int    // HTTP status
	Code    string // one of the Code* constants
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code) }

// Is maps codes to the catalog and cluster sentinels.
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
	case CodeNotLeader, CodeNoLeader:
		return target == cluster.ErrNotLeader
	case CodeTimeout:
		return target == cluster.ErrTimeout
	}
	return false
}

// classify maps an error to HTTP status and code.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, catalog.ErrInvalid), errors.Is(err, catalog.ErrVersion), errors.Is(err, errBadRequest):
		return http.StatusBadRequest, CodeInvalid
	case errors.Is(err, catalog.ErrNotFound):
		return http.StatusNotFound, CodeNotFound
	case errors.Is(err, catalog.ErrExists):
		return http.StatusConflict, CodeExists
	case errors.Is(err, catalog.ErrConflict):
		return http.StatusConflict, CodeConflict
	case errors.Is(err, errNoLeader):
		return http.StatusServiceUnavailable, CodeNoLeader
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrClosed):
		return http.StatusServiceUnavailable, CodeNotLeader
	case errors.Is(err, cluster.ErrTimeout):
		return http.StatusGatewayTimeout, CodeTimeout
	}
	return http.StatusInternalServerError, CodeInternal
}

var (
	errBadRequest = errors.New("bad request")
	errNoLeader   = errors.New("no leader reachable")
)
