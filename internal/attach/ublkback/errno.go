package ublkback

import (
	"errors"
	"syscall"

	"github.com/rdmablk/rdmablk/initiator"
	"github.com/rdmablk/rdmablk/nvme"
)

// Errno is the errno a block request ends with for err, the result of an
// initiator Request: 0 for nil; for an NVMe status the errno Linux's NVMe
// host gives it (nvme_error_status → blk_status_to_errno); EINVAL for a
// request the initiator refused as malformed; EOPNOTSUPP for an operation
// the controller lacks; EIO for everything else (lost controller past
// ctrl-loss-tmo, closed session, transport errors).
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var se *initiator.StatusError
	if errors.As(err, &se) {
		return StatusErrno(se.Status)
	}
	switch {
	case errors.Is(err, initiator.ErrInvalid), errors.Is(err, initiator.ErrUnaligned):
		return syscall.EINVAL
	case errors.Is(err, initiator.ErrNotSupported):
		return syscall.EOPNOTSUPP
	case errors.Is(err, initiator.ErrTimeout):
		return syscall.ETIMEDOUT
	}
	return syscall.EIO
}

// StatusErrno maps an NVMe completion status (NVMe Base §4.6.1.2) to an
// errno as Linux's nvme_error_status does: the block layer's status for
// the code, then that status's errno.
func StatusErrno(st nvme.Status) syscall.Errno {
	switch st.Code() {
	case nvme.StatusSuccess:
		return 0
	case nvme.StatusCapacityExceeded: // BLK_STS_NOSPC
		return syscall.ENOSPC
	case nvme.StatusLBAOutOfRange, nvme.StatusNamespaceNotReady: // BLK_STS_TARGET
		return syscall.EREMOTEIO
	case nvme.StatusConflictingAttributes, nvme.StatusInvalidOpcode, nvme.StatusInvalidField,
		nvme.StatusInvalidNamespace, statusONCSNotSupported: // BLK_STS_NOTSUPP
		return syscall.EOPNOTSUPP
	case nvme.StatusWriteFault, nvme.StatusUnrecoveredRead, nvme.StatusDeallocatedLBA,
		nvme.StatusAccessDenied, nvme.StatusWriteToReadOnly, statusCompareFailure: // BLK_STS_MEDIUM
		return syscall.ENODATA
	case statusGuardCheck, statusAppTagCheck, statusRefTagCheck, nvme.StatusInvalidPI: // BLK_STS_PROTECTION
		return syscall.EILSEQ
	case nvme.StatusReservationConflict: // BLK_STS_RESV_CONFLICT
		return syscall.EBADE
	case nvme.StatusHostPathError: // BLK_STS_TRANSPORT
		return syscall.ENOLINK
	}
	return syscall.EIO
}

// Status codes the nvme package does not name (NVM Command Set §4.1.2:
// command specific and media errors).
const (
	statusONCSNotSupported nvme.Status = 0x183 // I/O commands (Linux NVME_SC_ONCS_NOT_SUPPORTED; Connect reuses the code)
	statusGuardCheck       nvme.Status = 0x282 // End-to-end Guard Check Error
	statusAppTagCheck      nvme.Status = 0x283 // End-to-end Application Tag Check Error
	statusRefTagCheck      nvme.Status = 0x284 // End-to-end Reference Tag Check Error
	statusCompareFailure   nvme.Status = 0x285 // Compare Failure
)
