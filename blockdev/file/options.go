package file

import (
	"errors"
	"fmt"
)

// DirectMode selects whether the backend uses O_DIRECT.
type DirectMode uint8

const (
	// DirectAuto uses O_DIRECT for aligned I/O when the filesystem allows
	// it and silently runs buffered-only when it does not.
	DirectAuto DirectMode = iota
	// DirectOn uses O_DIRECT for aligned I/O; Open fails with
	// ErrDirectUnsupported if the filesystem refuses it. Misaligned I/O
	// still goes buffered.
	DirectOn
	// DirectOff never uses O_DIRECT.
	DirectOff
)

// String returns "auto", "on" or "off".
func (m DirectMode) String() string {
	switch m {
	case DirectAuto:
		return "auto"
	case DirectOn:
		return "on"
	case DirectOff:
		return "off"
	}
	return fmt.Sprintf("DirectMode(%d)", uint8(m))
}

// Options configure Open.
type Options struct {
	// Size in bytes. A regular file that is missing or smaller is created
	// or grown (sparse) to this size; a larger file is left as it is but
	// only Size bytes of it are served. For a block device, Size must not
	// exceed the device. 0 means the existing size (the file must exist).
	Size int64
	// BlockSize is the logical block size: a power of two in
	// [blockdev.MinBlockSize, blockdev.MaxBlockSize]. 0 means 512 for
	// files and the device's logical block size for block devices, which
	// it may not undercut.
	BlockSize int
	// ReadOnly opens the file read-only; writes, zeroes and discards
	// return blockdev.ErrReadOnly and the file is never created or grown.
	ReadOnly bool
	// Direct selects O_DIRECT use; the zero value is DirectAuto.
	Direct DirectMode
	// RingEntries bounds the io_uring fast path (blockdev.Async): how many
	// entries (one per I/O, one per piece of an I/O above MaxPiece) this
	// backend keeps in flight on its shared ring at most.
	// 0 → DefaultRingEntries; negative → no io_uring (Submit* always
	// return false). The fast path needs O_DIRECT and a kernel with
	// io_uring (5.6+); without them it is off.
	RingEntries int
	// Rings is the ring group whose io_uring instances the fast path
	// shares with other backends; nil → DefaultRingGroup(). Linux only.
	Rings *RingGroup
	// MaxPiece is the largest transfer the fast path issues as one
	// io_uring entry, in bytes; a larger SubmitRead/SubmitWrite goes out
	// as several entries of at most MaxPiece each, in flight together, and
	// completes once when all of them have. 0 → for a block device, the
	// largest request its queue takes (BLKSECTGET, max_sectors_kb); for a
	// regular file, no limit. Negative → no limit. io_uring issues a
	// block-device read or write without blocking first, and the block
	// layer refuses to split a non-blocking request: one larger than the
	// queue's limit fails that attempt and is carried out by an io_uring
	// worker thread instead (a thread hop and a second submission per
	// I/O). At most 1 MiB (one direct-I/O bio); rounded down to a
	// multiple of 4 KiB (of the direct-I/O alignment below that); below
	// the alignment, no limit.
	MaxPiece int
}

// Errors returned by Open.
var (
	// ErrInvalidOptions: an Options field is out of range.
	ErrInvalidOptions = errors.New("file: invalid options")
	// ErrUnsupportedFile: the path is neither a regular file nor a block
	// device, or the platform is not Linux.
	ErrUnsupportedFile = errors.New("file: not a regular file or block device")
	// ErrTooSmall: the file or device is smaller than Options.Size and
	// cannot be grown, or holds less than one block.
	ErrTooSmall = errors.New("file: too small")
	// ErrTooLarge: the requested size is more than the filesystem can ever
	// hold: beyond its total capacity (statfs) or its maximum file size
	// (EFBIG). Returned by Open when it would grow a file, and by
	// CheckSize.
	ErrTooLarge = errors.New("file: size beyond what the filesystem can hold")
	// ErrDirectUnsupported: DirectOn was asked for and the filesystem
	// refuses O_DIRECT.
	ErrDirectUnsupported = errors.New("file: O_DIRECT not supported here")
)

// GroupOptions configure NewRingGroup. Zero values take the defaults.
type GroupOptions struct {
	// Rings is the number of io_uring instances; volumes are spread over
	// them round robin at Open. 0 → GOMAXPROCS (without Ps kept for sleeping pollers: nbsys.Procs).
	Rings int
	// Entries is each ring's submission queue size (rounded up to a
	// power of two by the kernel). 0 → DefaultGroupRingEntries.
	Entries int
	// FixedEntries is the size of each ring's fixed-buffer table.
	// 0 → FixedTableEntries.
	FixedEntries int
}
