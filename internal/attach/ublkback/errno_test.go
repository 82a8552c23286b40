package ublkback

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
)

// TestErrno checks the errno of each initiator outcome against Linux's
// nvme_error_status mapping.
func TestErrno(t *testing.T) {
	st := func(s nvme.Status) error {
		return fmt.Errorf("wrapped: %w", &initiator.StatusError{Op: "read", Status: s})
	}
	for _, c := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{st(nvme.StatusCapacityExceeded), syscall.ENOSPC},
		{st(nvme.StatusCapacityExceeded | nvme.StatusDNR), syscall.ENOSPC},
		{st(nvme.StatusInvalidOpcode), syscall.EOPNOTSUPP},
		{st(nvme.StatusInvalidField), syscall.EOPNOTSUPP},
		{st(nvme.StatusInvalidNamespace), syscall.EOPNOTSUPP},
		{st(nvme.StatusConflictingAttributes), syscall.EOPNOTSUPP},
		{st(statusONCSNotSupported), syscall.EOPNOTSUPP},
		{st(nvme.StatusUnrecoveredRead), syscall.ENODATA},
		{st(nvme.StatusWriteFault), syscall.ENODATA},
		{st(nvme.StatusDeallocatedLBA), syscall.ENODATA},
		{st(nvme.StatusAccessDenied), syscall.ENODATA},
		{st(nvme.StatusWriteToReadOnly), syscall.ENODATA},
		{st(statusCompareFailure), syscall.ENODATA},
		{st(statusGuardCheck), syscall.EILSEQ},
		{st(statusAppTagCheck), syscall.EILSEQ},
		{st(statusRefTagCheck), syscall.EILSEQ},
		{st(nvme.StatusInvalidPI), syscall.EILSEQ},
		{st(nvme.StatusReservationConflict), syscall.EBADE},
		{st(nvme.StatusLBAOutOfRange), syscall.EREMOTEIO},
		{st(nvme.StatusNamespaceNotReady), syscall.EREMOTEIO},
		{st(nvme.StatusHostPathError), syscall.ENOLINK},
		{st(nvme.StatusInternalError), syscall.EIO},
		{st(nvme.StatusDataTransferError), syscall.EIO},
		{st(nvme.StatusANAInaccessible), syscall.EIO},
		{fmt.Errorf("%w: %w", initiator.ErrControllerLost, syscall.EIO), syscall.EIO},
		{initiator.ErrSessionClosed, syscall.EIO},
		{initiator.ErrClosed, syscall.EIO},
		{initiator.ErrInvalid, syscall.EINVAL},
		{initiator.ErrUnaligned, syscall.EINVAL},
		{initiator.ErrNotSupported, syscall.EOPNOTSUPP},
		{initiator.ErrTimeout, syscall.ETIMEDOUT},
		{errors.New("anything else"), syscall.EIO},
	} {
		if got := Errno(c.err); got != c.want {
			t.Errorf("Errno(%v) = %v (%d), want %v (%d)", c.err, got, got, c.want, c.want)
		}
	}
}
