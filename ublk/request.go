package ublk

import (
	"fmt"
	"syscall"
)

// limits is what a queue checks each descriptor against: the device as
// set up (from the kernel's dev_info and our params).
type limits struct {
	devSectors     uint64 // capacity in 512-byte sectors
	lbsMask        uint64 // logical block size in sectors, minus one
	maxIOSectors   uint32 // read/write limit (max_sectors)
	maxDiscard     uint32 // sectors; 0: unsupported
	maxWriteZeroes uint32 // sectors; 0: unsupported
	readOnly       bool
}

// parseRequest decodes and validates the descriptor d (kernel input) into
// r, with data the tag's buffer. It returns 0, or the errno to complete
// the request with (EINVAL: malformed; EOPNOTSUPP: an operation the
// device does not offer; EIO past the end; EROFS: write to read-only).
// Arithmetic is overflow-checked: sectors are 64-bit, lengths 32-bit.
func parseRequest(d ioDesc, lim *limits, data []byte, r *Request) syscall.Errno {
	*r = Request{}
	op := d.opFlags & 0xff
	flags := d.opFlags &^ 0xff
	r.FUA = flags&iodFUA != 0
	r.NoUnmap = flags&iodNoUnmap != 0
	n := uint64(d.nrSectors)
	switch op {
	case iodOpFlush:
		r.Op = OpFlush
		return 0
	case iodOpRead, iodOpWrite:
		r.Op = OpRead
		if op == iodOpWrite {
			r.Op = OpWrite
		}
		if n == 0 || d.nrSectors > lim.maxIOSectors {
			return syscall.EINVAL
		}
	case iodOpDiscard:
		r.Op = OpDiscard
		if lim.maxDiscard == 0 {
			return syscall.EOPNOTSUPP
		}
		if n == 0 || d.nrSectors > lim.maxDiscard {
			return syscall.EINVAL
		}
	case iodOpWriteZeroes:
		r.Op = OpWriteZeroes
		if lim.maxWriteZeroes == 0 {
			return syscall.EOPNOTSUPP
		}
		if n == 0 || d.nrSectors > lim.maxWriteZeroes {
			return syscall.EINVAL
		}
	default:
		return syscall.EOPNOTSUPP
	}
	// Whole logical blocks, inside the device (start+n computed without
	// overflow: both are checked against the capacity first).
	if d.startSector&lim.lbsMask != 0 || n&lim.lbsMask != 0 {
		return syscall.EINVAL
	}
	if d.startSector > lim.devSectors || n > lim.devSectors-d.startSector {
		return syscall.EIO
	}
	if lim.readOnly && r.Op != OpRead {
		return syscall.EROFS
	}
	// devSectors < 2^55 (checked at setup), so neither shift overflows.
	r.Offset = d.startSector << 9
	r.Length = n << 9
	if r.Op == OpRead || r.Op == OpWrite {
		if uint64(len(data)) < r.Length {
			return syscall.EINVAL
		}
		r.Data = data[:r.Length]
	}
	return 0
}

// String formats a request for logs.
func (r *Request) String() string {
	return fmt.Sprintf("%v off=%d len=%d fua=%v", r.Op, r.Offset, r.Length, r.FUA)
}
