package nbd

import (
	"errors"
	"syscall"
)

// Sentinel errors.
var (
	// ErrServerClosed is returned by Serve after Close.
	ErrServerClosed = errors.New("nbd: server closed")
	// ErrProtocol: the peer violated the protocol; the connection ends.
	ErrProtocol = errors.New("nbd: protocol error")
	// ErrNoExport: no export of that name.
	ErrNoExport = errors.New("nbd: no such export")
	// ErrNoDevice: no kernel nbd device is available (no nbd module, no
	// free /dev/nbdX).
	ErrNoDevice = errors.New("nbd: no kernel nbd device available")
)

// errnoOf maps a backend error to the errno of an NBD error reply: a
// syscall.Errno among those the protocol names is passed through,
// anything else is EIO.
func errnoOf(err error) uint32 {
	var en syscall.Errno
	if errors.As(err, &en) {
		switch uint32(en) {
		case errPerm, errIO, errNoMem, errInval, errNoSpc, errOverflow, errNotSup, errShutdown:
			return uint32(en)
		}
	}
	return errIO
}
