package server

import (
	"errors"
	"net/http"

	"github.com/rdmablk/rdmablk/cluster"
	"github.com/rdmablk/rdmablk/cluster/api"
	"github.com/rdmablk/rdmablk/cluster/catalog"
)

// classify maps an error to HTTP status and code.
func classify(err error) (int, string) {
	switch {
	case errors.Is(err, catalog.ErrInvalid), errors.Is(err, catalog.ErrVersion), errors.Is(err, errBadRequest):
		return http.StatusBadRequest, api.CodeInvalid
	case errors.Is(err, catalog.ErrNotFound):
		return http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, catalog.ErrExists):
		return http.StatusConflict, api.CodeExists
	case errors.Is(err, catalog.ErrStaleEpoch):
		return http.StatusConflict, api.CodeStaleEpoch
	case errors.Is(err, catalog.ErrConflict):
		return http.StatusConflict, api.CodeConflict
	case errors.Is(err, errNoLeader):
		return http.StatusServiceUnavailable, api.CodeNoLeader
	case errors.Is(err, cluster.ErrOutcomeUnknown):
		return http.StatusServiceUnavailable, api.CodeUnknown
	case errors.Is(err, cluster.ErrNotLeader), errors.Is(err, cluster.ErrClosed):
		return http.StatusServiceUnavailable, api.CodeNotLeader
	case errors.Is(err, cluster.ErrTimeout):
		return http.StatusGatewayTimeout, api.CodeTimeout
	case errors.Is(err, errUnauthenticated):
		return http.StatusUnauthorized, api.CodeUnauthenticated
	case errors.Is(err, errForbidden):
		return http.StatusForbidden, api.CodeForbidden
	}
	return http.StatusInternalServerError, api.CodeInternal
}

var (
	errBadRequest      = errors.New("bad request")
	errNoLeader        = errors.New("no leader reachable")
	errUnauthenticated = errors.New("unauthenticated")
	errForbidden       = errors.New("forbidden")
)
