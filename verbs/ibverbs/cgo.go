//go:build ibverbs

package ibverbs

/*
#cgo LDFLAGS: -libverbs -lrdmacm
#include "rb.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"github.com/rdmablk/rdmablk/verbs"
)

// Compile-time layout checks: Poll writes C rb_wc records straight into a
// []verbs.WorkCompletion, and PostSend copies []verbs.SGE into ibv_sge
// arrays. Each pair of array types fails to compile unless the sizes and
// offsets agree exactly.
var (
	wc0  verbs.WorkCompletion
	sge0 verbs.SGE

	_ [unsafe.Sizeof(wc0) - C.RB_WC_SIZE]byte
	_ [C.RB_WC_SIZE - unsafe.Sizeof(wc0)]byte
	_ [unsafe.Offsetof(wc0.Status) - C.RB_WC_OFF_STATUS]byte
	_ [C.RB_WC_OFF_STATUS - unsafe.Offsetof(wc0.Status)]byte
	_ [unsafe.Offsetof(wc0.ByteLen) - C.RB_WC_OFF_BYTE_LEN]byte
	_ [C.RB_WC_OFF_BYTE_LEN - unsafe.Offsetof(wc0.ByteLen)]byte
	_ [unsafe.Offsetof(wc0.QPNum) - C.RB_WC_OFF_QP_NUM]byte
	_ [C.RB_WC_OFF_QP_NUM - unsafe.Offsetof(wc0.QPNum)]byte
	_ [unsafe.Offsetof(wc0.Imm) - C.RB_WC_OFF_IMM]byte
	_ [C.RB_WC_OFF_IMM - unsafe.Offsetof(wc0.Imm)]byte
	_ [unsafe.Offsetof(wc0.InvalidatedRKey) - C.RB_WC_OFF_INV]byte
	_ [C.RB_WC_OFF_INV - unsafe.Offsetof(wc0.InvalidatedRKey)]byte
	_ [unsafe.Offsetof(wc0.VendorErr) - C.RB_WC_OFF_VENDOR]byte
	_ [C.RB_WC_OFF_VENDOR - unsafe.Offsetof(wc0.VendorErr)]byte
	_ [unsafe.Sizeof(sge0) - C.RB_SGE_SIZE]byte
	_ [C.RB_SGE_SIZE - unsafe.Sizeof(sge0)]byte
	_ [unsafe.Offsetof(sge0.Length) - C.RB_SGE_OFF_LENGTH]byte
	_ [C.RB_SGE_OFF_LENGTH - unsafe.Offsetof(sge0.Length)]byte
	_ [unsafe.Offsetof(sge0.LKey) - C.RB_SGE_OFF_LKEY]byte
	_ [C.RB_SGE_OFF_LKEY - unsafe.Offsetof(sge0.LKey)]byte
)

// batch is the number of work requests posted per cgo call.
const batch = int(C.RB_BATCH)

// errnoErr maps an errno from rdma-core to this package's errors, wrapping
// the verbs sentinels. what names the failed call.
func errnoErr(what string, e C.int) error {
	if e == 0 {
		return nil
	}
	en := syscall.Errno(e)
	var s error
	switch en {
	case syscall.ENOSYS, syscall.ENODEV, syscall.ENXIO:
		s = verbs.ErrNoDevice
	case syscall.EINVAL, syscall.ERANGE, syscall.EOVERFLOW, syscall.E2BIG:
		s = verbs.ErrInvalid
	case syscall.EBUSY:
		s = verbs.ErrInvalid
	case syscall.EOPNOTSUPP, syscall.EPROTONOSUPPORT:
		s = verbs.ErrNotSupported
	case syscall.EADDRNOTAVAIL, syscall.ENETUNREACH, syscall.EHOSTUNREACH, syscall.ECONNREFUSED, syscall.ETIMEDOUT:
		s = verbs.ErrUnreachable
	default:
		return fmt.Errorf("ibverbs: %s: %w", what, en)
	}
	return fmt.Errorf("%w: ibverbs: %s: %w", s, what, en)
}

// isEAGAIN reports whether a helper's return value means "nothing yet".
func isEAGAIN(e C.int) bool {
	return syscall.Errno(e) == syscall.EAGAIN || syscall.Errno(e) == syscall.EWOULDBLOCK
}

var errBadAddr = errors.New("ibverbs: bad address")

// mapErr maps the errno a cgo call returned as its second value.
func mapErr(err error) error {
	if en, ok := err.(syscall.Errno); ok && en != 0 {
		return errnoErr("", C.int(en))
	}
	if err == nil {
		return errors.New("ibverbs: unknown error")
	}
	return err
}

func unsafePtr(ss *C.struct_sockaddr_storage) unsafe.Pointer { return unsafe.Pointer(ss) }
