package file

import (
	"fmt"
	"io"
	"syscall"

	"github.com/rdmablk/rdmablk/blockdev"
)

// osErr wraps an errno from operation op at byte offset off (-1: none),
// adding the blockdev sentinel the target maps to an NVMe status.
func (b *Backend) osErr(op string, off int64, e syscall.Errno) error {
	where := ""
	if off >= 0 {
		where = fmt.Sprintf(" at byte %d", off)
	}
	switch e {
	case syscall.EIO, syscall.EBADMSG, syscall.EUCLEAN:
		return fmt.Errorf("file %s: %s%s: %w: %w", b.path, op, where, blockdev.ErrMedium, e)
	case syscall.EROFS:
		return fmt.Errorf("file %s: %s%s: %w: %w", b.path, op, where, blockdev.ErrReadOnly, e)
	case syscall.ENOSPC, syscall.EDQUOT:
		return fmt.Errorf("file %s: %s%s: %w: %w", b.path, op, where, blockdev.ErrNoSpace, e)
	}
	return fmt.Errorf("file %s: %s%s: %w", b.path, op, where, e)
}

// shortErr reports a transfer that made no progress without an errno.
func (b *Backend) shortErr(write bool, off int64) error {
	if write {
		return fmt.Errorf("file %s: write at byte %d: %w: %w", b.path, off, blockdev.ErrMedium, io.ErrShortWrite)
	}
	return fmt.Errorf("file %s: read at byte %d: %w: %w", b.path, off, blockdev.ErrMedium, io.ErrUnexpectedEOF)
}
